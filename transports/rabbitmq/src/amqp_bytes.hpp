// rabbitmq-c's byte ranges to and from std::string: the one conversion
// every file that talks AMQP needs. Internal to the transport (and the
// operator CLI, which reads the broker the same way).
#pragma once

#include <string>

#include <amqp.h>

namespace bus::detail {

// A view of `s` for a call into rabbitmq-c; valid while `s` is.
inline amqp_bytes_t bytes_of(const std::string& s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}

// A copy of `b`, which rabbitmq-c frees or reuses after the call.
inline std::string text_of(amqp_bytes_t b) {
  return b.len == 0 ? std::string() : std::string(static_cast<const char*>(b.bytes), b.len);
}

} // namespace bus::detail
