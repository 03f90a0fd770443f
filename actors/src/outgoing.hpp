// Stamping a new message: id, type, time, source and conversation. Shared
// by sends from outside the bus and from inside a handler: stamp_outgoing()
// is the one function every message a user sends passes through, and
// carry_over() the one place where the bus copies what a handler's send
// inherits from the message being handled.
#pragma once

#include <string>

#include "bus/envelope.hpp"
#include "bus/send_options.hpp"

namespace bus::detail {

// A fresh random message id. Ids need uniqueness, not reproducibility, so
// this draws from a per-thread generator seeded once from the OS.
[[nodiscard]] std::string new_message_id();

// An envelope around `body` (typed; its type names the message), from
// `source`, sent at `now`.
[[nodiscard]] envelope make_envelope(message_body body, std::string source, time_point now);

// The envelope of a message a user sends to `queue` (empty: a publish):
// make_envelope() with `options` applied, then, when it is sent from a
// handler (`received` is the message being handled, else null), what it
// inherits by carry_over(). Never fails.
[[nodiscard]] envelope stamp_outgoing(message_body body, std::string source, time_point now,
                                      std::string queue, send_options options,
                                      const envelope* received);

// What a message sent from a handler inherits from `received`, the message
// being handled, unless the handler's options say otherwise:
//   - the correlation id: the received one's, or its message id when it has
//     none, so everything a handler sends joins the conversation;
//   - trace context and deadline: hooks below, one line each.
// Called once per outgoing envelope, after its own options were applied.
void carry_over(const envelope& received, envelope& out, const send_options& options);

} // namespace bus::detail
