// The outbox and inbox steps of a consumer on an endpoint with a message
// store (endpoint_builder::outbox; the port is bus/message_store.hpp):
// open the attempt's transaction with its inbox record, commit the
// handler's writes and sends together, and mark the sends dispatched once
// they are out. The store's calls block: they run on the consumer's own
// thread, as the handler does.
#pragma once

#include <vector>

#include "bus/outgoing_message.hpp"
#include "consumer_actor.hpp"

namespace bus::detail {

// Before an attempt. True if the handler is to run, inside the transaction
// it opened. False if the delivery went on without the handler: a copy of
// a message handled already (acknowledged), one whose stored sends did not
// all go out (they are sent now), or a store that failed (a failed
// attempt, for the policy).
[[nodiscard]] bool open_inbox(consumer* self);

// After the handler returned: stores its sends and commits everything.
// False if the commit failed; the attempt failed then.
[[nodiscard]] bool commit_attempt(consumer* self, const std::vector<outgoing_message>& outbox);

// After the handler failed: undoes what it wrote, inbox record included.
void roll_back_attempt(consumer* self);

// Every stored send is out: marks them dispatched, then the delivery is
// handled. A mark that fails gives the delivery back to its queue: when it
// returns, its stored sends go out (again) and the mark is tried again.
void stored_sends_out(consumer* self);

} // namespace bus::detail
