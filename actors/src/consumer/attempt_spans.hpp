// Tells the span observer (bus/spans.hpp) how an attempt ended. Called by
// the consumer once per attempt, as its outcome is decided: on success
// after the outbox went out, on a failure before the decision is carried
// out. Costs a null check when nobody observes spans.
#pragma once

#include "bus/policy/action.hpp"
#include "bus/spans.hpp"
#include "consumer/state.hpp"

namespace bus::detail {

// The current attempt of `self` succeeded.
void report_handled(consumer* self);
// The current attempt of `self` failed and `decided` follows.
void report_failed(consumer* self, const action& decided);

} // namespace bus::detail
