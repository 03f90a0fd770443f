// The optional fields of a message a user sends: from outside a handler
// (message_bus::send, publish, request, send_at) and from inside one
// (handler_context::send, publish, reply, defer) alike. Every field left
// empty gets the bus's default: a fresh message id, and inside a handler
// the correlation id of the message being handled (see handler_context).
#pragma once

#include <optional>
#include <string>

#include "bus/headers.hpp"
#include "bus/time.hpp"

namespace bus {

// New fields are appended, so that aggregate initialisation in callers'
// code keeps its meaning.
struct send_options {
  std::string correlation_id;   // empty: none outside a handler; the handled message's inside one
  std::string response_address; // where replies go; empty: none
  std::string fault_address;    // where fault<T> goes; empty: the response address
  bus::headers headers;   // the user's own; a bus-* header here is the caller's responsibility
  std::string message_id; // empty: a fresh one; set it for an idempotency key of your own
  // The message expires (bus-expires-at) this long after it is sent, or at
  // this time; with both, the earlier. An expired message is never run.
  std::optional<duration> time_to_live;
  std::optional<time_point> expires_at;
};

} // namespace bus
