// Carrying out what became of an attempt: the executor of the consumer's
// decisions, in one place (NServiceBus's recoverability executor). Each
// function works on the consumer's current delivery; the ones that send
// start an asynchronous call and go on in on_sent() when it completes.
// Every ending claims the delivery first (see delivery_claim), and ends in
// settle_and_report(), which settles it with the transport and frees the
// slot.
#pragma once

#include <string>
#include <vector>

#include "atoms.hpp"
#include "bus/handler_context.hpp"
#include "consumer_actor.hpp"

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

// Forgets the current delivery and reports to the endpoint how it ended,
// naming the delivery this consumer took from the ready line to go on
// with, if any.
void report_and_go_on(consumer* self, outcome result);

// The actions of the policy.
void retry_now(consumer* self, const immediate_retry& a);
void redeliver_later(consumer* self, const delayed_retry& a);
void fail_for_good(consumer* self, const move_to_error& a);
void end_in_fault(consumer* self, fault_details fault, std::string queue);
void drop(consumer* self, const discard& a);

// No handler for the message: the skipped queue (or nothing, by option).
void skip_message(consumer* self);

// A successful attempt: the outbox goes out, then the delivery is handled.
void release_outbox(consumer* self, std::vector<outgoing_message> outbox);

// The endpoint replaced a scheduler that died.
void scheduler_replaced(consumer* self, caf::actor scheduler);

// A completion of an asynchronous send of `step`, and the backoff timer.
void on_sent(consumer* self, ending_step step, result<void> sent);
void try_again(consumer* self);

// Defined with the attempt (consumer_actor.cpp): a failed attempt, and a
// successful one whose outbox is out.
void on_failure(consumer* self, std::exception_ptr error);
void succeed(consumer* self);

} // namespace bus::detail
