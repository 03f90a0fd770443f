// Where exception policies are configured: host, bus, transport, endpoint,
// consumer. The most specific scope that defines rules replaces the others
// as a whole; nothing is merged (Mocha's scope hierarchy).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string_view>

#include "bus/policy/rule_set.hpp"

namespace bus {

// From the least to the most specific.
enum class scope_level { host, bus, transport, endpoint, consumer };

[[nodiscard]] std::string_view to_string(scope_level scope) noexcept;

// The rule set that applies, and the scope it came from; no scope when no
// scope defines rules (then every failure goes to the error queue).
struct resolved_rules {
  rule_set rules;
  std::optional<scope_level> scope;
};

// The rule sets that can apply to one consumer. The runtime keeps the host,
// bus and transport sets once and copies them into each consumer's scopes.
class recoverability_scopes {
public:
  // The rule set of `scope`. A scope defines rules from the first call on,
  // even if it ends up empty: an empty consumer scope sends every failure
  // of that consumer to the error queue, whatever the bus scope says.
  rule_set& at(scope_level scope);

  // add_resilience on the rule set of `scope`: the entry point of each scope.
  recoverability_scopes& add_resilience(scope_level scope);
  recoverability_scopes& add_resilience(scope_level scope,
                                        const std::function<void(policy_builder&)>& configure);

  // Sets the rule set of `scope` wholesale, e.g. the bus's shared set.
  recoverability_scopes& assign(scope_level scope, rule_set rules);

  // The rule set of `scope`, or null when the scope defines none.
  [[nodiscard]] const rule_set* find(scope_level scope) const noexcept;

  // The most specific scope that defines rules, as a whole.
  [[nodiscard]] resolved_rules resolve() const;

private:
  std::array<std::optional<rule_set>, 5> scopes_;
};

} // namespace bus
