// Carrying out what the policy decided for a failed attempt: the executor
// of the consumer's decisions, in one place (NServiceBus's recoverability
// executor), and the skipped queue for a message no handler takes. Each
// function works on the consumer's current delivery; the ones that send
// start an asynchronous call and go on in ending_sent() when it completes.
// Every ending but an immediate retry claims the delivery first and ends in
// settle_and_report() (settling.hpp).
#pragma once

#include <string>

#include "bus/fault.hpp"
#include "bus/policy/action.hpp"
#include "consumer/state.hpp"

namespace bus::detail {

// The actions of the policy.
void retry_now(consumer* self, const immediate_retry& a);
void redeliver_later(consumer* self, const delayed_retry& a);
void fail_for_good(consumer* self, const move_to_error& a);
void end_in_fault(consumer* self, fault_details fault, std::string queue);
void drop(consumer* self, const discard& a);

// No handler for the message: the skipped queue (or nothing, by option).
void skip_message(consumer* self);

// The endpoint replaced a scheduler that died.
void scheduler_replaced(consumer* self, caf::actor scheduler);

// A completion of an asynchronous send of an ending's `step` (the error or
// skipped queue), and the backoff timer of a step refused for now.
void ending_sent(consumer* self, ending_step step, const result<void>& sent);
void try_again(consumer* self);

} // namespace bus::detail
