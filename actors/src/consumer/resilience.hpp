// A consumer's part in issue 14's retry budget and deadlines: it deposits
// a fresh message's first attempt in the endpoint's budget, charges every
// retry the policy decides (taking the fallback when the budget refuses),
// and ends a message that expired before an attempt without running it.
// Called from the attempt cycle (attempt.cpp, reading.cpp) and as a
// failure is decided (outcome.cpp), on the consumer's thread; the budget
// itself is thread-safe (see resilience_budget.hpp for why it lives there).
#pragma once

#include "bus/policy/action.hpp"
#include "bus/policy/error_context.hpp"
#include "consumer/state.hpp"

namespace bus::detail {

// The current delivery is a fresh message about to make its first
// attempt: deposits it in the budget, if the endpoint has one.
void count_first_attempt(consumer* self);

// `decided` if it is no retry, there is no budget, or the budget pays for
// it; otherwise the fallback of the policy (when_budget_spent), logged on
// bus.retry_budget, counted (retries_denied) and raised (retry_denied).
[[nodiscard]] action charge_retry(consumer* self, action decided, const error_context& context);

// If the current delivery's message has expired (bus-expires-at <= now):
// counts it, raises `expired`, and ends it as its policy says (discarded,
// or dead-lettered with the reason "expired"); its handler never runs.
// True if it ended so.
[[nodiscard]] bool ended_as_expired(consumer* self);

} // namespace bus::detail
