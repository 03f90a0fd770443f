// Exceptions with a fixed meaning to the bus, for handlers that know
// better than the policy what should happen to their message.
//
//   throw bus::poison_message("order references a deleted customer");
//       -> the error queue at once, whatever the rules say
//   throw bus::retry_requested("inventory not replicated yet");
//       -> a failed attempt like any other: the policy decides how to retry
//
// handler_context::poison() and retry() say the same without throwing.
#pragma once

#include <stdexcept>
#include <string>

namespace bus {

class poison_message : public std::runtime_error {
public:
  explicit poison_message(const std::string& reason) : std::runtime_error(reason) {}
};

class retry_requested : public std::runtime_error {
public:
  explicit retry_requested(const std::string& reason) : std::runtime_error(reason) {}
};

// A message larger than its endpoint accepts (endpoint_builder::
// max_message_size): it goes to the error queue without reaching a handler.
class message_too_large : public std::runtime_error {
public:
  explicit message_too_large(const std::string& what) : std::runtime_error(what) {}
};

} // namespace bus
