// The envelope: one message with everything the bus needs to route,
// retry and trace it. Envelopes are moved between stages, never copied on
// the success path.
#pragma once

#include <cstdint>
#include <string>

#include "bus/headers.hpp"
#include "bus/message_body.hpp"
#include "bus/time.hpp"

namespace bus {

struct envelope {
  std::string message_id;
  std::string message_type;   // the registered name, e.g. "order_placed"
  std::string correlation_id; // the conversation it belongs to; empty if none
  time_point sent_at{};
  std::string source_address;      // the endpoint (or "bus" from outside) that sent it
  std::string destination_address; // the queue it was sent to; empty for a publish
  std::string response_address;    // where replies go; empty if none
  std::string fault_address;       // where fault<T> goes; empty: the response address, else publish
  std::uint32_t delivery_count = 0; // redeliveries performed so far
  bus::headers headers;             // user headers and what the bus adds (fault-*, ...)
  message_body body;
};

// A fresh message id in the UUID v4 text form, from two random words the
// caller draws (the library has no generator of its own).
[[nodiscard]] std::string make_message_id(std::uint64_t random_hi, std::uint64_t random_lo);

} // namespace bus
