// Dependency breakers in a scenario: the bus's declarations
// ("bus": {"dependencies": {"inventory-db": {...}}}) and the names a rule
// trips or an endpoint depends on. Values out of range are refused here
// with their path; a name that the bus does not declare is the bus's to
// refuse, in its words, when it is built.
#include <map>

#include "parse_common.hpp"
#include "scenario.hpp"

namespace bus::scenario {

namespace {

std::optional<std::string> dependency_name_at(const node& n) {
  auto name = n.as_string();
  if (name && name->empty()) {
    n.error("expected the name of a dependency, not an empty string");
    return std::nullopt;
  }
  return name;
}

std::optional<dependency_breaker_settings> parse_dependency(const node& n) {
  auto o = n.as_object(
    {"consecutive_failures", "failure_rate", "window", "minimum_calls", "open_wait"});
  if (!o)
    return std::nullopt;
  dependency_breaker_settings s;
  bool ok = true;
  if (auto f = o->get("consecutive_failures")) {
    auto v = detail::int_at(*f, 0);
    ok = ok && v;
    s.consecutive_failures = v.value_or(0);
  }
  if (auto f = o->get("failure_rate")) {
    const auto& j = f->json();
    if (!j.is_number() || j.get<double>() < 0 || j.get<double>() > 1) {
      f->error("expected a number from 0 (off) to 1, e.g. 0.5 for 50%");
      ok = false;
    } else {
      s.failure_rate = j.get<double>();
    }
  }
  if (auto f = o->get("window")) {
    auto v = f->as_duration();
    ok = ok && v;
    s.window = v.value_or(s.window);
  }
  if (auto f = o->get("minimum_calls")) {
    auto v = detail::int_at(*f, 1);
    ok = ok && v;
    s.minimum_calls = v.value_or(1);
  }
  if (auto f = o->get("open_wait")) {
    auto v = f->as_duration();
    ok = ok && v;
    if (v && *v <= duration::zero()) {
      f->error("expected a positive duration: how long the breaker stays open before a probe");
      ok = false;
    }
    s.open_wait = v.value_or(s.open_wait);
  }
  if (ok && s.consecutive_failures == 0 && s.failure_rate == 0) {
    n.error("consecutive_failures and failure_rate are both off: the breaker would never open");
    ok = false;
  }
  if (!ok)
    return std::nullopt;
  return s;
}

} // namespace

std::optional<std::vector<std::string>> parse_dependency_names(const node& n) {
  if (n.json().is_string()) {
    auto name = dependency_name_at(n);
    if (!name)
      return std::nullopt;
    return std::vector<std::string>{*name};
  }
  auto items = n.as_array();
  if (!items)
    return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (const auto& item : *items) {
    if (auto name = dependency_name_at(item))
      out.push_back(std::move(*name));
    else
      ok = false;
  }
  if (!ok)
    return std::nullopt;
  return out;
}

std::optional<std::vector<dependency_spec>> parse_dependencies(const node& n) {
  if (!n.json().is_object()) {
    n.error("expected an object of dependency names and their settings, e.g. "
            "{\"inventory-db\": {\"consecutive_failures\": 5}}");
    return std::nullopt;
  }
  std::vector<dependency_spec> out;
  bool ok = true;
  for (const auto& [name, value] : n.json().items()) {
    node item(value, join_path(n.path(), name), n.diag());
    if (name.empty()) {
      item.error("expected the name of a dependency, not an empty string");
      ok = false;
      continue;
    }
    if (auto s = parse_dependency(item))
      out.push_back(dependency_spec{name, *s});
    else
      ok = false;
  }
  if (!ok)
    return std::nullopt;
  return out;
}

} // namespace bus::scenario
