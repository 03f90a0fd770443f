// The wire form of an envelope, for transports that carry bytes: a flat
// list of string headers (the bus-* ones plus the user's) and a JSON body.
// from_wire is the one place where untrusted input from outside the process
// is parsed, so it checks everything and never throws.
#pragma once

#include <string>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/headers.hpp"

namespace bus {

struct wire_message {
  bus::headers headers;
  std::string body;
};

// Serializes the envelope; fails only if its typed body cannot be serialized.
[[nodiscard]] result<wire_message> to_wire(const envelope& env);

// Rebuilds an envelope. Requires bus-message-id and bus-message-type;
// bus-sent-at and bus-delivery-count, when present, must be integers. The
// body stays JSON text: decoding it is the receiving endpoint's job, so that
// an unknown type or a malformed body becomes a delivery failure there.
[[nodiscard]] result<envelope> from_wire(wire_message msg);

} // namespace bus
