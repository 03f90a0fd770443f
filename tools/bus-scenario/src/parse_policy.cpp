// The "policy" objects of a scenario: rules by exception type and
// predicate, their retry and redelivery tiers and terminal actions.
#include <limits>
#include <utility>

#include "parse_common.hpp"
#include "scenario.hpp"

namespace bus::scenario {

namespace {

using detail::int_at;

std::optional<predicate> parse_predicate(const node& n, const exception_type_info& type);

std::optional<predicate> parse_comparison(const object_reader& o,
                                          const exception_type_info& type) {
  auto field_node = o.require("field");
  auto field = field_node ? field_node->as_string() : std::nullopt;
  std::vector<std::string_view> ops;
  for (auto op : {"equals", "not_equals", "in", "contains"})
    if (o.has(op))
      ops.push_back(op);
  if (ops.size() != 1) {
    o.self().error("give exactly one of equals, not_equals, in, contains");
    return std::nullopt;
  }
  if (!field)
    return std::nullopt;
  auto kind = field_kind_of(type, *field);
  if (!kind) {
    std::vector<std::string> names{"message"};
    for (const auto& f : type.fields)
      names.push_back(f.name);
    field_node->error(unknown_name_text("field of " + type.name, *field, names));
    return std::nullopt;
  }
  predicate p;
  p.field = *field;
  auto operand = *o.get(ops.front());
  if (ops.front() == "in") {
    p.kind = predicate::op::in;
    auto items = operand.as_array();
    if (!items)
      return std::nullopt;
    if (items->empty()) {
      operand.error("expected at least one value");
      return std::nullopt;
    }
    bool ok = true;
    for (const auto& item : *items) {
      if (auto v = detail::field_value_at(item, *kind))
        p.values.push_back(std::move(*v));
      else
        ok = false;
    }
    return ok ? std::optional<predicate>(std::move(p)) : std::nullopt;
  }
  if (ops.front() == "contains") {
    p.kind = predicate::op::contains;
    if (*kind != field_kind::text) {
      operand.error("contains compares text, and " + *field + " is a "
                    + std::string(samples::to_string(*kind)));
      return std::nullopt;
    }
  } else {
    p.kind = ops.front() == "equals" ? predicate::op::equals : predicate::op::not_equals;
  }
  auto v = detail::field_value_at(operand, *kind);
  if (!v)
    return std::nullopt;
  p.values.push_back(std::move(*v));
  return p;
}

std::optional<predicate> parse_predicate(const node& n, const exception_type_info& type) {
  auto o = n.as_object({"field", "equals", "not_equals", "in", "contains", "all", "any", "not"});
  if (!o)
    return std::nullopt;
  std::vector<std::string_view> combinators;
  for (auto c : {"all", "any", "not"})
    if (o->has(c))
      combinators.push_back(c);
  if (combinators.empty())
    return parse_comparison(*o, type);
  if (combinators.size() > 1 || n.json().size() > 1) {
    n.error("a condition with " + std::string(combinators.front())
            + " has no other field; nest the others inside it");
    return std::nullopt;
  }
  predicate p;
  auto operand = *o->get(combinators.front());
  if (combinators.front() == "not") {
    p.kind = predicate::op::negate;
    auto inner = parse_predicate(operand, type);
    if (!inner)
      return std::nullopt;
    p.operands.push_back(std::move(*inner));
    return p;
  }
  p.kind = combinators.front() == "all" ? predicate::op::all : predicate::op::any;
  auto items = operand.as_array();
  if (!items)
    return std::nullopt;
  if (items->empty()) {
    operand.error("expected at least one condition");
    return std::nullopt;
  }
  bool ok = true;
  for (const auto& item : *items) {
    if (auto inner = parse_predicate(item, type))
      p.operands.push_back(std::move(*inner));
    else
      ok = false;
  }
  return ok ? std::optional<predicate>(std::move(p)) : std::nullopt;
}

std::optional<bus::backoff> parse_backoff(const node& n) {
  auto text = n.as_string();
  if (!text)
    return std::nullopt;
  if (*text == "constant")
    return backoff::constant;
  if (*text == "linear")
    return backoff::linear;
  if (*text == "exponential")
    return backoff::exponential;
  n.error(unknown_name_text("backoff", *text, {"constant", "linear", "exponential"}));
  return std::nullopt;
}

// `type` is null for on_any(): its delay_from can only be checked when an
// exception arrives.
std::optional<tier_spec> parse_tier(const node& n, const exception_type_info* type,
                                    bool redelivery) {
  auto o = n.as_object(
    {"count", "delay", "backoff", "intervals", "delay_from", "jitter", "max_delay"});
  if (!o)
    return std::nullopt;
  tier_spec t;
  bool ok = true;
  auto read = [&](std::string_view key, auto parse) {
    if (auto field = o->get(key)) {
      auto v = parse(*field);
      ok = ok && v.has_value();
      return v;
    }
    return decltype(parse(std::declval<node>())){};
  };
  t.count = read("count", [](const node& f) { return int_at(f, 0); });
  t.delay = read("delay", [](const node& f) { return f.as_duration(); });
  t.backoff = read("backoff", parse_backoff);
  t.delay_from = read("delay_from", [](const node& f) { return f.as_string(); });
  t.jitter = read("jitter", [](const node& f) { return f.as_bool(); });
  t.max_delay = read("max_delay", [](const node& f) { return f.as_duration(); });
  if (auto intervals = o->get("intervals")) {
    if (auto items = intervals->as_array()) {
      t.intervals.emplace();
      for (const auto& item : *items) {
        if (auto d = item.as_duration())
          t.intervals->push_back(*d);
        else
          ok = false;
      }
    } else {
      ok = false;
    }
  }
  // Which call of the DSL these settings make, and what cannot go together.
  if (o->has("intervals") && (o->has("count") || o->has("delay") || o->has("backoff")
                              || o->has("delay_from"))) {
    o->get("intervals")->error("intervals give one delay per attempt: leave out count, delay, "
                               "backoff and delay_from");
    ok = false;
  }
  if (o->has("delay_from") && (o->has("delay") || o->has("backoff"))) {
    o->get("delay_from")->error("a delay read from the exception takes no delay or backoff");
    ok = false;
  }
  if (!o->has("count") && (o->has("delay") || o->has("backoff") || o->has("delay_from"))) {
    o->self().diag().error(join_path(n.path(), "count"),
                           "required with delay, backoff or delay_from");
    ok = false;
  }
  if (redelivery && o->has("count") && !o->has("delay") && !o->has("delay_from")) {
    o->self().diag().error(join_path(n.path(), "delay"),
                           "required with count: redeliver(count, delay) has no default delay");
    ok = false;
  }
  if (t.delay_from && type) {
    if (field_kind_of(*type, *t.delay_from) != field_kind::duration) {
      std::vector<std::string> names;
      for (const auto& f : type->fields)
        if (f.kind == field_kind::duration)
          names.push_back(f.name);
      o->get("delay_from")->error(
        names.empty() ? type->name + " has no duration field to read a delay from"
                      : unknown_name_text("duration field of " + type->name, *t.delay_from, names));
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return t;
}

std::optional<rule_spec> parse_rule(const node& n) {
  auto o = n.as_object(
    {"on", "when", "max_attempts", "max_time", "retry", "redeliver", "then", "action", "trips"});
  if (!o)
    return std::nullopt;
  rule_spec r;
  bool ok = true;
  const exception_type_info* type = nullptr;
  if (auto on = o->require("on")) {
    if (on->json() == "any") {
      r.on = "any";
    } else if ((type = detail::exception_type_at(*on, false))) {
      r.on = type->name;
    } else {
      ok = false;
    }
  } else {
    ok = false;
  }
  if (auto when = o->get("when")) {
    if (r.on == "any") {
      when->error("on_any() takes no condition: name an exception type in \"on\"");
      ok = false;
    } else if (type && !type->std_exception) {
      when->error(type->name + " does not derive from std::exception: a condition has no "
                  "fields to read");
      ok = false;
    } else if (type) {
      r.when = parse_predicate(*when, *type);
      ok = ok && r.when;
    }
  }
  if (auto f = o->get("max_attempts")) {
    r.max_attempts = int_at(*f, std::numeric_limits<int>::min());
    ok = ok && r.max_attempts;
  }
  if (auto f = o->get("max_time")) {
    r.max_time = f->as_duration();
    ok = ok && r.max_time;
  }
  // Without a type (on_any(), or a name that is not a type) delay_from is
  // checked when an exception arrives, or not at all.
  if (auto f = o->get("retry")) {
    r.retry = parse_tier(*f, type, false);
    ok = ok && r.retry;
  }
  if (auto f = o->get("redeliver")) {
    r.redeliver = parse_tier(*f, type, true);
    ok = ok && r.redeliver;
  }
  if (auto f = o->get("action")) {
    auto text = f->as_string();
    if (text == "dead_letter") {
      r.action = terminal::dead_letter;
    } else if (text == "discard") {
      r.action = terminal::discard;
    } else {
      if (text)
        f->error(unknown_name_text("action", *text, {"dead_letter", "discard"}));
      ok = false;
    }
    if (o->has("retry") || o->has("redeliver") || o->has("then")) {
      f->error("dead_letter and discard are the whole chain: leave out retry, redeliver and then");
      ok = false;
    }
  }
  if (auto f = o->get("then")) {
    auto text = f->as_string();
    if (text == "dead_letter") {
      r.then_dead_letter = true;
    } else {
      if (text)
        f->error("expected \"dead_letter\", the only action that may end a chain");
      ok = false;
    }
    if (!o->has("retry") && !o->has("redeliver")) {
      f->error("then follows retry or redeliver");
      ok = false;
    }
  }
  if (auto f = o->get("trips")) {
    auto names = parse_dependency_names(*f);
    ok = ok && names;
    r.trips = names.value_or(std::vector<std::string>{});
  }
  // A rule with no action at all is the bus's to refuse, in its words.
  if (!ok)
    return std::nullopt;
  return r;
}

} // namespace

std::optional<policy_spec> parse_policy(const node& n) {
  auto o = n.as_object({"defaults", "rules"});
  if (!o)
    return std::nullopt;
  policy_spec p;
  bool ok = true;
  if (auto f = o->get("defaults")) {
    auto v = f->as_bool();
    p.defaults = v.value_or(false);
    ok = ok && v;
  }
  if (auto f = o->get("rules")) {
    if (auto items = f->as_array()) {
      for (const auto& item : *items) {
        if (auto r = parse_rule(item))
          p.rules.push_back(std::move(*r));
        else
          ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return p;
}

// Issue 14's retry budget: each field optional, each mistake at its path.
std::optional<retry_budget_settings> parse_retry_budget(const node& n) {
  auto o = n.as_object({"name", "ratio", "window", "min_retries_per_second", "fallback"});
  if (!o)
    return std::nullopt;
  retry_budget_settings s;
  bool ok = true;
  if (auto f = o->get("name")) {
    auto name = f->as_string();
    if (name && name->empty()) {
      f->error("expected a non-empty name (leave it out for the endpoint's own budget)");
      name.reset();
    }
    ok = ok && name;
    s.name = name.value_or("");
  }
  if (auto f = o->get("ratio")) {
    if (!f->json().is_number() || f->json().get<double>() < 0 || f->json().get<double>() > 1000) {
      f->error("expected a number of retries per first attempt between 0 and 1000, e.g. 0.2");
      ok = false;
    } else {
      s.ratio = f->json().get<double>();
    }
  }
  if (auto f = o->get("window")) {
    auto window = f->as_duration();
    if (window && (*window < std::chrono::seconds(1) || *window > std::chrono::hours(24))) {
      f->error("expected a window between 1s and 24h");
      window.reset();
    }
    ok = ok && window;
    s.window = window.value_or(s.window);
  }
  if (auto f = o->get("min_retries_per_second")) {
    auto floor = detail::int_at(*f, 0);
    ok = ok && floor;
    s.min_retries_per_second = floor.value_or(s.min_retries_per_second);
  }
  if (auto f = o->get("fallback")) {
    auto text = f->as_string();
    if (text && !parse_budget_fallback(*text, s.fallback)) {
      f->error("unknown fallback \"" + *text + "\"; expected terminal, next_tier or longest_delay");
      text.reset();
    }
    ok = ok && text;
  }
  if (!ok)
    return std::nullopt;
  return s;
}

std::optional<expired_action> parse_expired_action(const node& n) {
  auto text = n.as_string();
  if (!text)
    return std::nullopt;
  expired_action a{};
  if (!bus::parse_expired_action(*text, a)) {
    n.error("unknown action \"" + *text + "\"; expected discard or dead_letter");
    return std::nullopt;
  }
  return a;
}

} // namespace bus::scenario
