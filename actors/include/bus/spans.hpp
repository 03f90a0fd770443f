// One span per attempt to handle a message, for bridging the bus's traces
// to a tracing library (OpenTelemetry C++, ...) without the bus depending
// on one. The bus carries W3C trace context (traceparent, tracestate)
// itself; a span observer turns each attempt into a span of the user's
// tracer: same trace id, the attempt's span id, its parent, start and end.
//
// The observer is called on the consumer's thread once per attempt, when
// its outcome is decided: it must be thread-safe, quick, and must not
// throw (what it throws is swallowed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "bus/time.hpp"

namespace bus {

// What became of an attempt: handled, or failed and what the policy decided.
enum class attempt_outcome {
  handled,         // the handler succeeded and its outbox went out
  immediate_retry, // failed; the handler runs again after `delay`
  redelivery,      // failed; the message is redelivered after `delay`
  error_queue,     // failed for good; the message goes to the error queue
  discarded,       // failed; dropped by a rule (or discard_faulted)
};

[[nodiscard]] std::string_view to_string(attempt_outcome outcome) noexcept;

struct attempt_span {
  std::string trace_id;       // 32 lowercase hex digits
  std::string span_id;        // 16 lowercase hex digits: this attempt; what its
                              // handler sends names it as the parent
  std::string parent_span_id; // the sender's span; empty for a message that
                              // came without traceparent (a new trace, a root span)
  std::string tracestate;     // the message's tracestate, unchanged; may be empty
  std::uint8_t trace_flags = 0;
  std::string endpoint;
  std::string message_id;
  std::string message_type;
  int attempt = 0;                  // attempts in this delivery, this one included
  std::uint32_t delivery_count = 0; // redeliveries performed before this delivery
  attempt_outcome outcome = attempt_outcome::handled;
  duration delay{};           // immediate_retry, redelivery
  std::string exception_type; // empty when handled
  std::string exception_message; // cut at the bus's fault text limit
  std::string reason;         // error_queue, discarded: why
  time_point started{};       // by the bus's clock (virtual time on CAF's test coordinator)
  time_point ended{};
};

using span_observer = std::function<void(const attempt_span&)>;

} // namespace bus
