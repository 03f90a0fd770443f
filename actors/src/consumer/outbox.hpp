// A successful attempt's sends, and the message store's inbox around the
// attempt where the endpoint has a store (endpoint_builder::outbox; the
// port is bus/message_store.hpp). Without a store the handler's messages
// go out and the delivery is handled once every send completed. With one,
// an attempt runs inside a transaction opened with its inbox record; the
// handler's writes and sends commit together, go out, and are marked
// dispatched. The store's calls block: they run on the consumer's own
// thread, as the handler does.
#pragma once

#include "bus/handler_context.hpp"
#include "consumer/state.hpp"

namespace bus::detail {

// Before an attempt on an endpoint with a store. True if the handler is to
// run, inside the transaction it opened. False if the delivery went on
// without the handler: a copy of a message handled already
// (acknowledged), one whose stored sends did not all go out (they are sent
// now), or a store that failed (a failed attempt, for the policy).
[[nodiscard]] bool open_inbox(consumer* self);

// After the handler failed: undoes what it wrote, inbox record included.
void roll_back_attempt(consumer* self);

// After a handler returned normally: its outbox (with what the endpoint's
// conventions add) is committed where there is a store, then goes out.
void on_success(consumer* self, handler_context& ctx);

// A completion of one of the outbox's sends. Once all completed the
// delivery is handled, or the attempt failed if one was refused.
void outbox_sent(consumer* self, result<void> sent);

} // namespace bus::detail
