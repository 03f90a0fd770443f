// The bottom of a consumer's ending: who may end the current delivery, the
// ending itself, and the way back of the transport's completions. Every ending claims the delivery first (see
// delivery_claim.hpp), settles it with the transport, and reports to the
// endpoint, which frees the slot unless the consumer took an offer from
// the ready line to go on with.
#pragma once

#include "atoms.hpp"
#include "consumer/state.hpp"

namespace bus::detail {

// Claims the right to end the current delivery. False if a stop gave it
// back to the transport already, or its connection is gone: the consumer
// has forgotten it then.
[[nodiscard]] bool claim_ending(consumer* self);

// Before an attempt (a first one or a retry): ends the current delivery
// unsettled if nobody can settle it any more (its connection is gone), so
// that no handler runs for an outcome that would be dropped. It claims the
// delivery first: a stop's drain timeout may be taking it back right now,
// and only one of the two may end it. True if it ended here.
[[nodiscard]] bool ended_as_stale(consumer* self);

// Settles the current delivery, forgets it and frees the slot.
void settle_and_report(consumer* self, outcome result);

// A completion of the transport for `step` of the current delivery, which
// comes back to this consumer as a message tagged with its delivery, so
// that a late one for a delivery it no longer works on is recognised and
// ignored.
[[nodiscard]] completion to_self(consumer* self, ending_step step);

// Forgets the current delivery and reports to the endpoint how it ended,
// naming the delivery this consumer took from the ready line to go on
// with, if any.
void report_and_go_on(consumer* self, outcome result);

} // namespace bus::detail
