#include "bus/policy/scopes.hpp"

#include <cstddef>
#include <utility>

namespace bus {

namespace {

std::size_t slot(scope_level scope) noexcept {
  return static_cast<std::size_t>(scope);
}

} // namespace

std::string_view to_string(scope_level scope) noexcept {
  switch (scope) {
    case scope_level::host:
      return "host";
    case scope_level::bus:
      return "bus";
    case scope_level::transport:
      return "transport";
    case scope_level::endpoint:
      return "endpoint";
    case scope_level::consumer:
      return "consumer";
  }
  return "unknown";
}

rule_set& recoverability_scopes::at(scope_level scope) {
  auto& rules = scopes_[slot(scope)];
  if (!rules)
    rules.emplace();
  return *rules;
}

recoverability_scopes& recoverability_scopes::add_resilience(scope_level scope) {
  at(scope).add_resilience();
  return *this;
}

recoverability_scopes&
recoverability_scopes::add_resilience(scope_level scope,
                                      const std::function<void(policy_builder&)>& configure) {
  at(scope).add_resilience(configure);
  return *this;
}

recoverability_scopes& recoverability_scopes::assign(scope_level scope, rule_set rules) {
  scopes_[slot(scope)] = std::move(rules);
  return *this;
}

const rule_set* recoverability_scopes::find(scope_level scope) const noexcept {
  const auto& rules = scopes_[slot(scope)];
  return rules ? &*rules : nullptr;
}

resolved_rules recoverability_scopes::resolve() const {
  for (const auto scope : {scope_level::consumer, scope_level::endpoint, scope_level::transport,
                           scope_level::bus, scope_level::host}) {
    if (const auto* rules = find(scope))
      return resolved_rules{*rules, scope};
  }
  return resolved_rules{};
}

} // namespace bus
