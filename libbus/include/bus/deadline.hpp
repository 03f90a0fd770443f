// A message's deadline, carried in its bus-expires-at header (Unix ms):
// reading it with bounds (headers come from outside the process), setting
// it, and handing the remaining deadline on to the messages a handler
// sends. Pure: the time comes in as an argument.
#pragma once

#include <optional>

#include "bus/envelope.hpp"
#include "bus/time.hpp"

namespace bus {

// When `message` expires, or nothing: no header, or one that is not a
// number of Unix ms within max_unix_ms of the epoch (a malformed one is
// ignored, never a reason to drop a message).
[[nodiscard]] std::optional<time_point> expires_at(const envelope& message);

// Sets the header; a time beyond max_unix_ms of the epoch is clamped to it.
void set_expires_at(envelope& message, time_point at);

// Whether `message` has expired at `now` (its expiry is not after now).
[[nodiscard]] bool expired(const envelope& message, time_point now);

// Deadline inheritance: `sent` expires no later than `handled`, the message
// whose handler sends it. An earlier expiry of its own is kept; nothing
// changes if `handled` has none. The one place the bus does it, called
// for every outbox message of an endpoint that opted in.
void inherit_deadline(envelope& sent, const envelope& handled);

} // namespace bus
