// W3C Trace Context (https://www.w3.org/TR/trace-context/) for the bus:
// parsing and formatting the `traceparent` header, and the ids the bus
// derives for a message's trace and for each attempt to handle it. Pure:
// the random words a new trace needs come in as arguments, so every
// function here is a table-tested function of its inputs.
//
// A malformed traceparent is never an error for its message: it reads as
// none, and the bus starts a new trace in its place.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bus {

using trace_id = std::array<std::uint8_t, 16>;
using span_id = std::array<std::uint8_t, 8>;

// One traceparent: the trace, the span of the sender (the parent of
// whatever handles the message), and the trace flags (bit 0: sampled).
struct trace_context {
  bus::trace_id trace{};
  span_id parent{};
  std::uint8_t flags = 0;

  friend bool operator==(const trace_context& a, const trace_context& b) {
    return a.trace == b.trace && a.parent == b.parent && a.flags == b.flags;
  }
  friend bool operator!=(const trace_context& a, const trace_context& b) { return !(a == b); }
};

// Reads a traceparent value: "00-<32 hex>-<16 hex>-<2 hex>", lowercase hex,
// neither id all zeros. A later version (01..fe) is read as the spec asks
// (its first four fields; more only after a '-'); version ff, uppercase
// hex, a wrong length or an all-zero id read as nothing.
[[nodiscard]] std::optional<trace_context> parse_traceparent(std::string_view text);

// The version-00 form of `context`, lowercase hex.
[[nodiscard]] std::string format_traceparent(const trace_context& context);

// Lowercase hex of an id.
[[nodiscard]] std::string to_hex(const trace_id& id);
[[nodiscard]] std::string to_hex(const span_id& id);

// A new trace from random words the caller draws: trace id from `hi` and
// `lo`, the sender's span from `span`, sampled. An all-zero draw (invalid
// in W3C) is nudged to a valid id.
[[nodiscard]] trace_context new_trace(std::uint64_t hi, std::uint64_t lo, std::uint64_t span);

// The trace of a message that arrived without a valid traceparent (a
// producer that does not trace): derived from its message id, so every
// attempt, redelivery and error-queue copy of that message, on any
// process, names the same trace without storing anything. No parent span.
[[nodiscard]] trace_context trace_for_untraced(std::string_view message_id);

// The span id of one attempt to handle a message: derived from the trace,
// the message id, its delivery count, the attempt number and the attempt's
// start (nanoseconds since the epoch), so the handler's outbox and the span
// observer name the same span without sharing state. Never all zeros.
[[nodiscard]] span_id attempt_span_id(const trace_id& trace, std::string_view message_id,
                                      std::uint32_t delivery_count, int attempt,
                                      std::int64_t started_ns);

// `parent`'s trace and flags with `span` as the parent: the traceparent of
// a message sent by the span `span`.
[[nodiscard]] trace_context child_of(const trace_context& parent, const span_id& span);

} // namespace bus
