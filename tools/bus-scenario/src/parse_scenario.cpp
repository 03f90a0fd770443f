// The top of a scenario file: message types, the bus, endpoints and their
// handlers, the messages to send, and what the faults must say.
#include <algorithm>
#include <set>

#include "parse_common.hpp"
#include "scenario.hpp"

namespace bus::scenario {

namespace {

// Reads an array of `T`, each element by `parse`; false if any failed.
template <class T, class F>
bool read_list(const node& n, std::vector<T>& out, F parse) {
  auto items = n.as_array();
  if (!items)
    return false;
  bool ok = true;
  for (const auto& item : *items) {
    if (auto v = parse(item))
      out.push_back(std::move(*v));
    else
      ok = false;
  }
  return ok;
}

std::optional<std::string> exception_name(const node& n) {
  const auto* type = detail::exception_type_at(n, false);
  return type ? std::optional<std::string>(type->name) : std::nullopt;
}

std::optional<std::size_t> message_slot_of(const node& n, const std::vector<std::string>& types) {
  auto name = n.as_string();
  if (!name)
    return std::nullopt;
  auto it = std::find(types.begin(), types.end(), *name);
  if (it == types.end()) {
    n.error(unknown_name_text("message type", *name, types) + "; declare it in message_types");
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - types.begin());
}

// A script whose consumer dies, or whose steps take time, is run by an
// actor, which the bus can only report as failing with handler_actor_error
// (its consumer's death, as bus::consumer_died).
bool check_actor_script(diagnostics& d, const std::string& path, const std::vector<step>& script) {
  bool ok = true;
  for (std::size_t i = 0; i < script.size(); ++i) {
    const auto& s = script[i];
    auto step_path = join_path(path, i);
    if (s.what == step::kind::raise && s.exception != "handler_actor_error") {
      d.error(join_path(step_path, "throw"),
              "a handler with \"die\" or \"takes\" in a script runs in an actor, and the bus "
              "reports every failure of an actor as handler_actor_error; throw that here");
      ok = false;
    }
    if (s.what == step::kind::poison) {
      d.error(join_path(step_path, "poison"),
              "a handler with \"die\" or \"takes\" in a script runs in an actor, which cannot "
              "mark a message as poison");
      ok = false;
    }
  }
  return ok;
}

// Decides which handlers actors serve, once every script is known, and
// checks their scripts; false if one cannot run in an actor.
bool assign_actors(scenario& s, const node& endpoints, diagnostics& d) {
  bool ok = true;
  std::set<std::string> checked; // a message with a count shares one script
  for (std::size_t ei = 0; ei < s.endpoints.size(); ++ei) {
    auto& e = s.endpoints[ei];
    for (std::size_t hi = 0; hi < e.handlers.size(); ++hi) {
      auto& h = e.handlers[hi];
      std::vector<const send_spec*> overrides;
      for (const auto& m : s.sends)
        if (m.to == e.name && m.type == h.message_type && m.script)
          overrides.push_back(&m);
      h.by_actor = needs_actor(h.script)
                   || std::any_of(overrides.begin(), overrides.end(),
                                  [](auto* m) { return needs_actor(*m->script); });
      auto path = join_path(join_path(join_path(endpoints.path(), ei), "handlers"), hi);
      if (!h.by_actor) {
        if (h.timeout) {
          d.error(join_path(path, "timeout"),
                  "only a handler served by an actor (a script with \"die\" or \"takes\") "
                  "has a timeout; a function handler runs until it returns");
          ok = false;
        }
        continue;
      }
      ok = check_actor_script(d, join_path(path, "script"), h.script) && ok;
      if (!h.sends.empty()) {
        d.error(join_path(path, "sends"),
                "a handler with \"die\" or \"takes\" in a script runs in an actor, which has no "
                "handler context to send with; give sends to handlers without \"die\" or "
                "\"takes\"");
        ok = false;
      }
      for (const auto* m : overrides)
        if (checked.insert(m->script_path).second)
          ok = check_actor_script(d, m->script_path, *m->script) && ok;
      if (!h.outages.empty()) {
        d.error(join_path(path, "outages"),
                "a handler with \"die\" or \"takes\" in a script runs in an actor, which the "
                "bus reports as failing with handler_actor_error only; give outages to handlers "
                "without \"die\" or \"takes\"");
        ok = false;
      }
    }
  }
  return ok;
}

// A message's own script only matters if its endpoint has a handler for it.
bool check_script_targets(const scenario& s, diagnostics& d) {
  bool ok = true;
  std::set<std::string> checked;
  for (const auto& m : s.sends) {
    if (!m.script || !checked.insert(m.script_path).second)
      continue;
    auto e = std::find_if(s.endpoints.begin(), s.endpoints.end(),
                          [&](const endpoint_spec& x) { return x.name == m.to; });
    if (e != s.endpoints.end()
        && std::none_of(e->handlers.begin(), e->handlers.end(),
                        [&](const handler_spec& h) { return h.message_type == m.type; })) {
      d.error(m.script_path, "endpoint \"" + m.to + "\" has no handler for " + m.type
                               + ": the message is skipped and runs no script");
      ok = false;
    }
  }
  return ok;
}

// {"type": "invoice_created", "to": "shipping"}: a message the handler sends.
std::optional<onward_send> parse_onward_send(const node& n, const std::vector<std::string>& types,
                                             const std::vector<std::string>& endpoints) {
  auto o = n.as_object({"type", "to"});
  if (!o)
    return std::nullopt;
  onward_send out;
  bool ok = true;
  if (auto f = o->require("type")) {
    auto slot = message_slot_of(*f, types);
    ok = ok && slot;
    if (slot) {
      out.message_slot = *slot;
      out.type = types[*slot];
    }
  } else {
    ok = false;
  }
  if (auto f = o->require("to")) {
    auto to = f->as_string();
    if (to && std::find(endpoints.begin(), endpoints.end(), *to) == endpoints.end()) {
      f->error(unknown_name_text("endpoint", *to, endpoints));
      ok = false;
    }
    ok = ok && to;
    out.to = to.value_or("");
  } else {
    ok = false;
  }
  if (!ok)
    return std::nullopt;
  return out;
}

// The handler's "sends": one of each type, since the type names what it
// sends (onward_name).
bool parse_onward_sends(const node& n, const std::vector<std::string>& types,
                        const std::vector<std::string>& endpoints, std::vector<onward_send>& out) {
  auto items = n.as_array();
  if (!items)
    return false;
  bool ok = true;
  for (const auto& item : *items) {
    auto send = parse_onward_send(item, types, endpoints);
    if (!send) {
      ok = false;
      continue;
    }
    auto same_type = [&](const onward_send& x) { return x.type == send->type; };
    if (std::any_of(out.begin(), out.end(), same_type)) {
      item.error("the handler sends " + send->type + " already; what it sends is named after the "
                 "message it handles and the type (<message>/" + send->type
                 + "), so one of each type");
      ok = false;
      continue;
    }
    out.push_back(std::move(*send));
  }
  return ok;
}

std::optional<handler_spec> parse_handler(const node& n, const std::vector<std::string>& types,
                                          const std::vector<std::string>& endpoints) {
  auto o = n.as_object({"message", "policy", "script", "outages", "timeout", "sends"});
  if (!o)
    return std::nullopt;
  handler_spec h;
  bool ok = true;
  if (auto f = o->require("message")) {
    auto slot = message_slot_of(*f, types);
    ok = ok && slot;
    if (slot) {
      h.message_slot = *slot;
      h.message_type = types[*slot];
    }
  } else {
    ok = false;
  }
  if (auto f = o->get("policy")) {
    h.policy = parse_policy(*f);
    ok = ok && h.policy;
  }
  if (auto f = o->get("script")) {
    bool read = read_list(*f, h.script, parse_step);
    if (read && h.script.empty()) {
      f->error("expected at least one step");
      read = false;
    }
    ok = ok && read;
  }
  if (h.script.empty())
    h.script.push_back(step::of(step::kind::succeed));
  if (auto f = o->get("outages"))
    ok = read_list(*f, h.outages, parse_outage) && ok;
  if (auto f = o->get("sends"))
    ok = parse_onward_sends(*f, types, endpoints, h.sends) && ok;
  if (auto f = o->get("timeout")) {
    h.timeout = f->as_duration();
    if (h.timeout && *h.timeout <= duration{}) {
      f->error("expected a duration longer than 0ms");
      h.timeout.reset();
    }
    ok = ok && h.timeout;
  }
  if (!ok)
    return std::nullopt;
  return h;
}

std::optional<rate_limit_spec> parse_rate_limit(const node& n) {
  auto o = n.as_object({"consecutive_failures", "wait"});
  if (!o)
    return std::nullopt;
  rate_limit_spec r;
  auto threshold = o->require("consecutive_failures");
  auto failures = threshold ? detail::int_at(*threshold, 0) : std::nullopt;
  auto wait_node = o->require("wait");
  auto wait = wait_node ? wait_node->as_duration() : std::nullopt;
  if (!failures || !wait)
    return std::nullopt;
  r.consecutive_failures = *failures;
  r.wait = *wait;
  return r;
}

// "sqlite" (a throwaway file) or {"sqlite": "<file>"}. The endpoint's
// name is in the message: an outbox is a choice about one endpoint.
std::optional<outbox_spec> parse_outbox(const node& n, const std::string& endpoint) {
  const std::string forms =
    "expected \"sqlite\" (a throwaway file in the run's temporary directory) or "
    "{\"sqlite\": \"<file>\"}";
  const std::string whose = "endpoint \"" + endpoint + "\": ";
  if (n.json().is_string()) {
    auto store = n.json().get<std::string>();
    if (store == "sqlite")
      return outbox_spec{};
    n.error(whose + "unknown store \"" + store + "\"; " + forms);
    return std::nullopt;
  }
  if (!n.json().is_object()) {
    n.error(whose + forms);
    return std::nullopt;
  }
  auto o = n.as_object({"sqlite"});
  if (!o)
    return std::nullopt;
  auto f = o->require("sqlite");
  auto file = f ? f->as_string() : std::nullopt;
  if (!file)
    return std::nullopt;
  if (file->empty()) {
    f->error(whose + "expected the path of the database file; \"outbox\": \"sqlite\" is a "
             "throwaway one");
    return std::nullopt;
  }
  return outbox_spec{*file};
}

std::optional<endpoint_spec> parse_endpoint(const node& n, const std::vector<std::string>& types,
                                            const std::vector<std::string>& endpoints) {
  auto o = n.as_object({"name", "slots", "error_queue", "policy", "unrecoverable",
                        "immediate_retries", "discard_faulted_messages", "rate_limit", "handlers",
                        "depends_on", "retry_budget", "expired_messages", "inherit_deadline",
                        "outbox"});
  if (!o)
    return std::nullopt;
  endpoint_spec e;
  bool ok = true;
  if (auto f = o->require("name")) {
    auto name = f->as_string();
    ok = ok && name;
    e.name = name.value_or("");
  } else {
    ok = false;
  }
  if (auto f = o->get("slots")) {
    auto slots = f->as_integer(0); // 0 is the bus's to refuse, in its words
    ok = ok && slots;
    e.slots = static_cast<std::size_t>(slots.value_or(1));
  }
  if (auto f = o->get("error_queue")) {
    e.error_queue = f->as_string();
    ok = ok && e.error_queue;
  }
  if (auto f = o->get("policy")) {
    e.policy = parse_policy(*f);
    ok = ok && e.policy;
  }
  if (auto f = o->get("unrecoverable"))
    ok = read_list(*f, e.unrecoverable, exception_name) && ok;
  if (auto f = o->get("immediate_retries")) {
    e.immediate_retries = f->as_bool();
    ok = ok && e.immediate_retries;
  }
  if (auto f = o->get("discard_faulted_messages")) {
    auto on = f->as_bool();
    ok = ok && on;
    e.discard_faulted_messages = on.value_or(false);
  }
  if (auto f = o->get("rate_limit")) {
    e.rate_limit = parse_rate_limit(*f);
    ok = ok && e.rate_limit;
  }
  if (auto f = o->get("depends_on")) {
    auto names = parse_dependency_names(*f);
    ok = ok && names;
    e.depends_on = names.value_or(std::vector<std::string>{});
  }
  if (auto f = o->require("handlers")) {
    ok = read_list(*f, e.handlers,
                   [&](const node& h) { return parse_handler(h, types, endpoints); })
         && ok;
  } else {
    ok = false;
  }
  if (auto f = o->get("retry_budget")) {
    e.retry_budget = parse_retry_budget(*f);
    ok = ok && e.retry_budget;
  }
  if (auto f = o->get("expired_messages")) {
    e.expired_messages = parse_expired_action(*f);
    ok = ok && e.expired_messages;
  }
  if (auto f = o->get("inherit_deadline")) {
    auto on = f->as_bool();
    ok = ok && on;
    e.inherit_deadline = on.value_or(false);
  }
  if (auto f = o->get("outbox")) {
    e.outbox = parse_outbox(*f, e.name);
    ok = ok && e.outbox;
  }
  if (!ok)
    return std::nullopt;
  return e;
}

bool parse_bus(const node& n, bus_spec& out) {
  auto o = n.as_object({"policy", "host_policy", "transport_policy", "unrecoverable",
                        "max_retry_time", "jitter_seed", "dependencies", "retry_budget",
                        "expired_messages"});
  if (!o)
    return false;
  bool ok = true;
  auto policy = [&](std::string_view key, std::optional<policy_spec>& target) {
    if (auto f = o->get(key)) {
      target = parse_policy(*f);
      ok = ok && target;
    }
  };
  policy("policy", out.policy);
  policy("host_policy", out.host_policy);
  policy("transport_policy", out.transport_policy);
  if (auto f = o->get("unrecoverable"))
    ok = read_list(*f, out.unrecoverable, exception_name) && ok;
  if (auto f = o->get("max_retry_time")) {
    out.max_retry_time = f->as_duration();
    ok = ok && out.max_retry_time;
  }
  if (auto f = o->get("jitter_seed")) {
    auto seed = f->as_integer(0);
    ok = ok && seed;
    if (seed)
      out.jitter_seed = static_cast<std::uint64_t>(*seed);
  }
  if (auto f = o->get("dependencies")) {
    auto deps = parse_dependencies(*f);
    ok = ok && deps;
    out.dependencies = deps.value_or(std::vector<dependency_spec>{});
  }
  if (auto f = o->get("retry_budget")) {
    out.retry_budget = parse_retry_budget(*f);
    ok = ok && out.retry_budget;
  }
  if (auto f = o->get("expired_messages")) {
    out.expired_messages = parse_expired_action(*f);
    ok = ok && out.expired_messages;
  }
  return ok;
}

bool parse_message_types(const node& n, std::vector<std::string>& out) {
  auto items = n.as_array();
  if (!items)
    return false;
  bool ok = true;
  if (items->empty()) {
    n.error("expected at least one message type");
    ok = false;
  }
  if (items->size() > max_message_types) {
    n.error("at most " + std::to_string(max_message_types) + " message types per scenario");
    ok = false;
  }
  for (const auto& item : *items) {
    auto name = item.as_string();
    if (!name) {
      ok = false;
    } else if (name->empty()) {
      item.error("expected a non-empty name");
      ok = false;
    } else if (std::find(out.begin(), out.end(), *name) != out.end()) {
      item.error("message type \"" + *name + "\" is declared twice");
      ok = false;
    } else {
      out.push_back(*name);
    }
  }
  return ok;
}

// Whether `body` would decode as a scenario message (scenario_messages.hpp):
// a JSON object with a text "name".
bool decodes_as_message(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_object() && j.contains("name") && j["name"].is_string();
}

// One entry of "send", several if it has a count: "order" x 3 is order-1,
// order-2, order-3.
bool parse_send(const node& n, const scenario& s, const std::vector<std::string>& endpoints,
                std::set<std::string>& names, std::vector<send_spec>& out) {
  auto o = n.as_object({"name", "type", "to", "at", "count", "script", "malformed_body",
                        "time_to_live", "copies"});
  if (!o)
    return false;
  send_spec base;
  bool ok = true;
  auto name_node = o->require("name");
  auto name = name_node ? name_node->as_string() : std::nullopt;
  if (name && name->find('/') != std::string::npos) {
    name_node->error("'/' is kept for the messages handlers send (<message>/<type>)");
    ok = false;
  }
  ok = ok && name;
  if (auto f = o->require("type")) {
    auto slot = message_slot_of(*f, s.message_types);
    ok = ok && slot;
    if (slot) {
      base.message_slot = *slot;
      base.type = s.message_types[*slot];
    }
  } else {
    ok = false;
  }
  if (auto f = o->require("to")) {
    auto to = f->as_string();
    if (to && std::find(endpoints.begin(), endpoints.end(), *to) == endpoints.end()) {
      f->error(unknown_name_text("endpoint", *to, endpoints));
      ok = false;
    }
    ok = ok && to;
    base.to = to.value_or("");
  } else {
    ok = false;
  }
  if (auto f = o->get("at")) {
    auto at = f->as_duration();
    ok = ok && at;
    base.at = at.value_or(duration{});
  }
  if (auto f = o->get("script")) {
    base.script.emplace();
    bool read = read_list(*f, *base.script, parse_step);
    if (read && base.script->empty()) {
      f->error("expected at least one step");
      read = false;
    }
    ok = ok && read;
    base.script_path = f->path();
  }
  if (auto f = o->get("malformed_body")) {
    base.malformed_body = f->as_string();
    ok = ok && base.malformed_body;
    if (base.malformed_body && decodes_as_message(*base.malformed_body)) {
      f->error("this body decodes as a message (an object with a text \"name\"); give one "
               "that does not, such as \"not JSON\" or \"{\\\"nme\\\": 1}\"");
      ok = false;
    }
    if (o->has("script")) {
      o->get("script")->error("a message with a malformed body never reaches a handler, so it "
                              "runs no script");
      ok = false;
    }
  }
  if (auto f = o->get("time_to_live")) {
    base.time_to_live = f->as_duration();
    ok = ok && base.time_to_live;
  }
  if (auto f = o->get("copies")) {
    auto copies = detail::int_at(*f, 1);
    ok = ok && copies;
    base.copies = copies.value_or(1);
  }
  int count = 1;
  if (auto f = o->get("count")) {
    auto c = detail::int_at(*f, 1);
    ok = ok && c;
    count = c.value_or(1);
  }
  if (!ok)
    return false;
  for (int i = 1; i <= count; ++i) {
    auto m = base;
    m.name = count == 1 ? *name : *name + "-" + std::to_string(i);
    if (!names.insert(m.name).second) {
      name_node->error("message name \"" + m.name + "\" is used twice");
      return false;
    }
    out.push_back(std::move(m));
  }
  return true;
}

// One entry of "expect.faults": true (a fault must be raised), false (none
// may be), or an object of what the fault must say.
std::optional<fault_expectation> parse_fault_expectation(const node& n, const std::string& message,
                                                         const std::vector<std::string>& endpoints) {
  fault_expectation e;
  e.message = message;
  e.path = n.path();
  if (n.json().is_boolean()) {
    e.raised = n.json().get<bool>();
    return e;
  }
  if (!n.json().is_object()) {
    n.error("expected true (a fault is raised), false (none is) or an object of what the "
            "fault says");
    return std::nullopt;
  }
  auto o = n.as_object({"exception", "exception_message", "reason_contains", "endpoint",
                        "immediate_retries", "delivery_count"});
  if (!o)
    return std::nullopt;
  bool ok = true;
  auto text = [&](std::string_view key, std::optional<std::string>& target) {
    if (auto f = o->get(key)) {
      target = f->as_string();
      ok = ok && target;
    }
  };
  if (auto f = o->get("exception")) {
    const auto* type = detail::exception_type_at(*f, false);
    ok = ok && type;
    if (type)
      e.exception = type->name;
  }
  text("exception_message", e.exception_message);
  text("reason_contains", e.reason_contains);
  text("endpoint", e.endpoint);
  if (e.endpoint && std::find(endpoints.begin(), endpoints.end(), *e.endpoint) == endpoints.end()) {
    o->get("endpoint")->error(unknown_name_text("endpoint", *e.endpoint, endpoints));
    ok = false;
  }
  auto count = [&](std::string_view key, std::optional<int>& target) {
    if (auto f = o->get(key)) {
      target = detail::int_at(*f, 0);
      ok = ok && target;
    }
  };
  count("immediate_retries", e.immediate_retries);
  count("delivery_count", e.delivery_count);
  if (!ok)
    return std::nullopt;
  return e;
}

// "expect": {"faults": {"<message>": ...}}: the messages by the names the
// output gives them (a send with a count names order-1, order-2, ...).
bool parse_expect(const node& n, const scenario& s, const std::vector<std::string>& endpoints,
                  std::vector<fault_expectation>& out) {
  auto o = n.as_object({"faults"});
  if (!o)
    return false;
  auto faults = o->get("faults");
  if (!faults)
    return true;
  if (!faults->json().is_object()) {
    faults->error("expected an object: a message's name, then true, false or what its fault "
                  "says");
    return false;
  }
  std::vector<std::string> names;
  for (const auto& m : s.sends)
    names.push_back(m.name);
  bool ok = true;
  for (const auto& [name, value] : faults->json().items()) {
    node item(value, join_path(faults->path(), name), n.diag());
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      item.error(unknown_name_text("message", name, names));
      ok = false;
      continue;
    }
    if (auto e = parse_fault_expectation(item, name, endpoints))
      out.push_back(std::move(*e));
    else
      ok = false;
  }
  return ok;
}

// The names the file gives its endpoints, even those with other mistakes,
// so that a send to them is not reported as well.
std::vector<std::string> endpoint_names(const nlohmann::json& document) {
  std::vector<std::string> out;
  auto endpoints = document.find("endpoints");
  if (endpoints == document.end() || !endpoints->is_array())
    return out;
  for (const auto& e : *endpoints)
    if (e.is_object() && e.contains("name") && e["name"].is_string())
      out.push_back(e["name"].get<std::string>());
  return out;
}

} // namespace

bool needs_actor(const std::vector<step>& script) {
  return std::any_of(script.begin(), script.end(), [](const step& s) {
    return s.what == step::kind::die || s.takes > duration{};
  });
}

std::optional<scenario> parse_scenario(const nlohmann::json& document, diagnostics& d) {
  node root(document, "", d);
  auto o = root.as_object({"description", "message_types", "bus", "endpoints", "send", "expect"});
  if (!o)
    return std::nullopt;
  scenario s;
  bool ok = true;
  if (auto f = o->get("description")) {
    auto text = f->as_string();
    ok = ok && text;
    s.description = text.value_or("");
  }
  if (auto f = o->require("message_types"))
    ok = parse_message_types(*f, s.message_types) && ok;
  else
    ok = false;
  if (auto f = o->get("bus"))
    ok = parse_bus(*f, s.bus) && ok;
  if (auto f = o->require("endpoints")) {
    auto names = endpoint_names(document);
    bool all_read = read_list(*f, s.endpoints, [&](const node& e) {
      return parse_endpoint(e, s.message_types, names);
    });
    ok = ok && all_read;
    // Indices match the file's only when every endpoint was read.
    std::set<std::string> defined;
    for (std::size_t i = 0; all_read && i < s.endpoints.size(); ++i)
      if (!defined.insert(s.endpoints[i].name).second) {
        d.error(join_path(join_path(f->path(), i), "name"),
                "endpoint \"" + s.endpoints[i].name + "\" is defined twice");
        ok = false;
      }
  } else {
    ok = false;
  }
  if (auto f = o->require("send")) {
    std::set<std::string> names;
    if (auto items = f->as_array()) {
      auto endpoints = endpoint_names(document);
      for (const auto& item : *items)
        ok = parse_send(item, s, endpoints, names, s.sends) && ok;
    } else {
      ok = false;
    }
  } else {
    ok = false;
  }
  if (ok) {
    // Expectations name messages: only once "send" was read whole.
    bool expect_ok = true;
    if (auto f = o->get("expect"))
      expect_ok = parse_expect(*f, s, endpoint_names(document), s.expected_faults);
    ok = check_script_targets(s, d);
    ok = assign_actors(s, *o->get("endpoints"), d) && ok;
    ok = ok && expect_ok;
  }
  if (!ok || !d.empty())
    return std::nullopt;
  std::stable_sort(s.sends.begin(), s.sends.end(),
                   [](const send_spec& a, const send_spec& b) { return a.at < b.at; });
  return s;
}

} // namespace bus::scenario
