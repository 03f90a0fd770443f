// A scenario's policy, turned into the calls of the bus's exception policy
// DSL (bus/policy/resilience.hpp) that a program would write by hand.
#pragma once

#include <exception>
#include <functional>

#include "bus/policy/resilience.hpp"
#include "scenario.hpp"

namespace bus::scenario {

// The callback to pass to a scope's add_resilience(...). With "defaults" it
// first registers what the parameterless add_resilience() does,
// on_any().retry().then_redeliver(); later rules replace it as they would.
[[nodiscard]] std::function<void(policy_builder&)> configure_of(const policy_spec& spec);

// Whether the condition holds for `e`. A field the exception lacks makes a
// comparison false (and its negation true).
[[nodiscard]] bool holds(const predicate& p, const std::exception& e);

} // namespace bus::scenario
