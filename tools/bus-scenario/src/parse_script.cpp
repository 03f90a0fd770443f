// What a scenario's handlers do: the steps of a script (what each attempt
// does, and how long it takes), and outages.
#include "parse_common.hpp"
#include "scenario.hpp"

namespace bus::scenario {

namespace {

// The exception of a "throw" step or an outage: its type, message, fields.
bool parse_raise(const object_reader& o, std::string& type_out, std::string& message_out,
                 field_values& fields_out) {
  auto type_node = o.require("throw");
  const auto* type = type_node ? detail::exception_type_at(*type_node, true) : nullptr;
  bool ok = type != nullptr;
  if (type && !type->std_exception)
    for (auto key : {"message", "fields"})
      if (auto f = o.get(key)) {
        f->error(type->name + " does not derive from std::exception: it has no " + key
                 + " (the bus reports it by its type alone)");
        ok = false;
      }
  if (auto f = o.get("message")) {
    auto text = f->as_string();
    ok = ok && text;
    message_out = text.value_or("");
  }
  if (auto f = o.get("fields"); f && type) {
    auto fields = detail::fields_at(*f, *type);
    ok = ok && fields;
    if (fields)
      fields_out = std::move(*fields);
  }
  if (type)
    type_out = type->name;
  return ok;
}

} // namespace

std::optional<step> parse_step(const node& n) {
  // The two steps without arguments may be written as plain strings.
  if (n.json().is_string()) {
    auto text = n.json().get<std::string>();
    if (text == "succeed")
      return step::of(step::kind::succeed);
    if (text == "die")
      return step::of(step::kind::die);
    n.error("expected \"succeed\", \"die\" or an object with one of succeed, die, throw, poison");
    return std::nullopt;
  }
  auto o = n.as_object({"succeed", "die", "throw", "poison", "message", "fields", "times", "takes"});
  if (!o)
    return std::nullopt;
  std::vector<std::string_view> kinds;
  for (auto k : {"succeed", "die", "throw", "poison"})
    if (o->has(k))
      kinds.push_back(k);
  if (kinds.size() != 1) {
    n.error("give exactly one of succeed, die, throw, poison");
    return std::nullopt;
  }
  step s;
  bool ok = true;
  auto what = kinds.front();
  if (what == "throw") {
    s.what = step::kind::raise;
    ok = parse_raise(*o, s.exception, s.message, s.fields);
  } else {
    for (auto extra : {"message", "fields"})
      if (o->has(extra)) {
        o->get(extra)->error("only a throw step has a " + std::string(extra));
        ok = false;
      }
    auto value = *o->get(what);
    if (what == "poison") {
      s.what = step::kind::poison;
      auto reason = value.as_string();
      ok = ok && reason;
      s.message = reason.value_or("");
    } else {
      s.what = what == "succeed" ? step::kind::succeed : step::kind::die;
      if (value.json() != true) {
        value.error("expected true");
        ok = false;
      }
    }
  }
  if (auto f = o->get("times")) {
    auto times = detail::int_at(*f, 1);
    ok = ok && times;
    s.times = times.value_or(1);
  }
  if (auto f = o->get("takes")) {
    auto takes = f->as_duration();
    ok = ok && takes;
    s.takes = takes.value_or(duration{});
  }
  if (!ok)
    return std::nullopt;
  return s;
}

std::optional<outage> parse_outage(const node& n) {
  auto o = n.as_object({"from", "until", "throw", "message", "fields"});
  if (!o)
    return std::nullopt;
  outage out;
  bool ok = parse_raise(*o, out.exception, out.message, out.fields);
  if (auto f = o->get("from")) {
    auto from = f->as_duration();
    ok = ok && from;
    out.from = from.value_or(duration{});
  }
  if (auto f = o->require("until")) {
    auto until = f->as_duration();
    ok = ok && until;
    out.until = until.value_or(duration{});
    if (until && *until <= out.from) {
      f->error("must be later than from");
      ok = false;
    }
  } else {
    ok = false;
  }
  if (!ok)
    return std::nullopt;
  return out;
}

} // namespace bus::scenario
