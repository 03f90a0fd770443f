// What the policy knows about a failed attempt: the exception, the
// counters of both tiers, the times, and the message. The runtime fills it
// in; the policy reads no clock and no header.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>

#include "bus/envelope.hpp"
#include "bus/time.hpp"

namespace bus {

// The body of a message could not be turned into its C++ type. Always
// unrecoverable: decide() sends it to the error queue before any rule or
// custom policy is consulted, since no retry makes a body readable.
class message_deserialization_error : public std::runtime_error {
public:
  explicit message_deserialization_error(const std::string& what) : std::runtime_error(what) {}
};

struct error_context {
  // What the handler threw. Empty is tolerated and goes to the error queue.
  std::exception_ptr exception;
  // Failed attempts in this delivery, counting the one that just failed:
  // 1 on the first failure, reset to 1 by each redelivery.
  int immediate_attempts = 1;
  // Redeliveries performed so far: 0 on the first delivery. The same count
  // as envelope::delivery_count and the bus-delivery-count header.
  std::uint32_t delivery_count = 0;
  // Failed attempts in all, across deliveries, counting the one that just
  // failed; what a rule's max_attempts budget is checked against. The
  // runtime fills it when it tracks attempts across redeliveries. Empty:
  // derived as delivery_count * (retries of the matched rule + 1) +
  // immediate_attempts, which is exact when every earlier delivery ran its
  // full cycle of retries (the case whenever that same rule redelivered).
  std::optional<int> total_attempts;
  // When this message first failed (carried across redeliveries) and now.
  time_point first_failure{};
  time_point now{};
  // The failing message; may be null (tests, explain()).
  const envelope* message = nullptr;
};

} // namespace bus
