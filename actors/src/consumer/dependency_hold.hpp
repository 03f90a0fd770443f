// A delivery given back unharmed while a dependency it needs is down: the
// consumer returns it to the endpoint's waiting line, unsettled and with no
// attempt spent against its policy, and the endpoint holds it until the
// dependency's breaker lets it through (dependency_pause.hpp).
#pragma once

#include "consumer/state.hpp"

namespace bus::detail {

// Before an attempt that is not a probe: the endpoint may have handed the
// delivery over (or scheduled its retry) just before a breaker opened.
// True if the delivery went back.
[[nodiscard]] bool held_before_attempt(consumer* self);

// After a failed attempt whose rule counts against a dependency: the
// breaker hears of it first. If the breaker is (now) open, or the rule has
// nothing else to say, the message goes back unharmed instead of down its
// policy's chain. True if it went back.
[[nodiscard]] bool held_for_dependency(consumer* self);

} // namespace bus::detail
