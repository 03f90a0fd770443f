// A delivery's attempts: a consumer begins a delivery it was given (or
// took from the ready line), runs its handler (a function on the
// consumer's thread, or a user's actor it asks), and runs it again when an
// immediate retry is due. What an attempt's end means is outcome.hpp's.
#pragma once

#include <string>

#include "consumer/state.hpp"

namespace bus::detail {

// Takes `d` and makes its first attempt in this delivery; `probe` for the
// single probe of a half-open dependency breaker.
void begin(consumer* self, delivery d, claim_ptr claim, bool throttled, bool probe);

// Takes over a delivery whose consumer died during `attempt`: that attempt
// failed, and the policy decides what follows, as for an exception.
void adopt(consumer* self, delivery d, claim_ptr claim, bool throttled, int attempt,
           const std::string& why);

// An immediate retry of the current delivery is due.
void retry_attempt(consumer* self);

} // namespace bus::detail
