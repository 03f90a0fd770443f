// What the policy knows about a failed attempt: the exception (and, when
// the runtime has looked into it, what it saw), the counters of both
// tiers, the times, and the message. The runtime fills it in; the policy
// reads no clock and no header.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>

#include "bus/caught_exception.hpp"
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
  // `exception` looked into already, by the runtime; null: decide() looks
  // into it itself (one rethrow). Used only when it holds that very
  // exception, so a context whose `exception` was changed afterwards stays
  // correct. Not owned: it must outlive the decision. decide() hands it on
  // to a custom policy, so that default_policy() called from there does
  // not look again.
  const caught_exception* caught = nullptr;
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
  // When the message expires (its bus-expires-at header), if it does: no
  // retry is scheduled to fire at or after it.
  std::optional<time_point> expires_at;
};

// A context for the exception the runtime has looked into, so that one
// rethrow serves the poison check, the fault description and the policy:
//
//   bus::caught_exception thrown(std::move(error));   // the one rethrow
//   if (thrown.is<bus::poison_message>()) ...         // no rethrow
//   auto what = thrown.describe();                    // no rethrow
//   auto context = bus::error_context_for(thrown);    // then the counters
//   auto next = bus::decide(config, context, rng);    // no rethrow
//
// `thrown` must outlive the context and every decision made with it.
[[nodiscard]] inline error_context error_context_for(const caught_exception& thrown) {
  error_context context;
  context.exception = thrown.pointer();
  context.caught = &thrown;
  return context;
}
// A temporary would be gone before the decision: keep it in a variable.
error_context error_context_for(caught_exception&&) = delete;

} // namespace bus
