// The names of every header the bus writes. One prefix, so operators can
// tell the bus's headers from their own at a glance.
#pragma once

#include <string_view>

namespace bus::header {

inline constexpr std::string_view prefix = "bus-";

inline constexpr std::string_view message_id = "bus-message-id";
inline constexpr std::string_view message_type = "bus-message-type";
inline constexpr std::string_view correlation_id = "bus-correlation-id";
inline constexpr std::string_view sent_at = "bus-sent-at";
inline constexpr std::string_view source_address = "bus-source-address";
inline constexpr std::string_view destination_address = "bus-destination-address";
inline constexpr std::string_view response_address = "bus-response-address";
inline constexpr std::string_view fault_address = "bus-fault-address";
// Redeliveries performed so far (0 on the first delivery).
inline constexpr std::string_view delivery_count = "bus-delivery-count";
// Carried across redeliveries, so a rule's time limit and attempt budget
// see the whole history of a message: when it first failed (Unix ms) and
// how many attempts failed in all.
inline constexpr std::string_view first_failure_at = "bus-first-failure-at";
inline constexpr std::string_view failed_attempts = "bus-failed-attempts";

// Written on a copy that goes to the error queue.
inline constexpr std::string_view fault_exception_type = "bus-fault-exception-type";
inline constexpr std::string_view fault_message = "bus-fault-message";
inline constexpr std::string_view fault_at = "bus-fault-at";
inline constexpr std::string_view fault_host = "bus-fault-host";
inline constexpr std::string_view fault_process = "bus-fault-process";
inline constexpr std::string_view fault_endpoint = "bus-fault-endpoint";
inline constexpr std::string_view fault_original_address = "bus-fault-original-address";
inline constexpr std::string_view fault_immediate_retries = "bus-fault-immediate-retries";
inline constexpr std::string_view fault_delivery_count = "bus-fault-delivery-count";
inline constexpr std::string_view fault_reason = "bus-fault-reason";
// On the error copy of a message read from a stream: its offset there. It
// also marks the copy as one that a replay must not append to the stream
// again (bus/replay_headers.hpp, stream_replay_refusal).
inline constexpr std::string_view fault_stream_offset = "bus-fault-stream-offset";
// On a failed message the bus holds back because no error queue or file
// would take it: its fate is decided, it goes to the error queue when it
// comes back, without running its handler again.
inline constexpr std::string_view fault_pending = "bus-fault-pending";

// The trace of the failed attempt, on the error-queue copy: its trace id
// and the span id of the attempt that failed last (lowercase hex), so an
// operator finds the failure's trace without parsing traceparent.
inline constexpr std::string_view fault_trace_id = "bus-fault-trace-id";
inline constexpr std::string_view fault_span_id = "bus-fault-span-id";
// When the message expires (Unix ms): it is not run after that
// (NServiceBus's time to be received, MassTransit's time to live).
inline constexpr std::string_view expires_at = "bus-expires-at";

// Written on a copy that goes to the skipped queue.
inline constexpr std::string_view skipped_reason = "bus-skipped-reason";

// Set by a transport on a message that arrived without what the bus needs
// (no id or type it could find, a malformed bus header): what was wrong and
// what was looked at. It describes that receipt; a replay drops it.
inline constexpr std::string_view wire_error = "bus-wire-error";

// Set by a transport on a message that came without the bus's headers (a
// foreign producer's): where it came from and what its AMQP properties
// said, for a type mapping (endpoint_builder::foreign_types), a convention
// (MassTransit's content type) and an operator reading the error or
// skipped queue. The bus's own messages do not carry them.
inline constexpr std::string_view amqp_exchange = "amqp-exchange";         // basic.deliver's
inline constexpr std::string_view amqp_routing_key = "amqp-routing-key";   // basic.deliver's
inline constexpr std::string_view amqp_type = "amqp-type";                 // the type property
inline constexpr std::string_view amqp_content_type = "amqp-content-type"; // content-type

// W3C Trace Context (bus/trace_context.hpp). Without the bus- prefix on
// purpose: these are the standard's names, read and written as they are by
// every tracing library and by other services on the same broker, so a
// trace crosses from an HTTP service into the bus and out again.
inline constexpr std::string_view traceparent = "traceparent";
inline constexpr std::string_view tracestate = "tracestate";

// Written by busctl on a message it replays from an error queue (docs/busctl.md);
// a replay writes bus-delivery-count 0 with them and drops the fault facts and
// the broker's own headers (x-death, x-delivery-count, ...).
inline constexpr std::string_view replayed_at = "bus-replayed-at";     // ISO 8601, UTC
inline constexpr std::string_view replay_count = "bus-replay-count";   // 1 on the first replay
inline constexpr std::string_view replayed_from = "bus-replayed-from"; // the queue it came from

} // namespace bus::header
