// A message a handler sent, published or deferred, as it waits for the
// handler's attempt to end: in the context's outbox in memory, and, on an
// endpoint with a message store, as a row of the store's outbox too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/time.hpp"

namespace bus {

// Sent to `queue`, or published when the queue is empty.
struct outgoing_message {
  std::string queue;
  envelope message;
  duration delay{}; // > 0: held for this long first (defer), by the scheduler or the broker
};

// The text a store keeps for `out`: its queue, delay, headers and body, as
// one JSON object that any database's text column holds. Fails only if the
// typed body cannot be serialized.
[[nodiscard]] result<std::string> encode_outgoing(const outgoing_message& out);
// The records of every message of an outbox, in order; the first failure.
[[nodiscard]] result<std::vector<std::string>>
encode_outgoing(const std::vector<outgoing_message>& outbox);

// Rebuilds a stored message; errc::malformed_message, saying what is wrong,
// for a record that is not one encode_outgoing() wrote (a corrupt row, a
// hand edit). Its body stays JSON text, typed by the endpoint receiving it.
[[nodiscard]] result<outgoing_message> decode_outgoing(std::string_view record);

} // namespace bus
