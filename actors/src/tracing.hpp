// The trace context the bus carries by itself, in one place: which
// traceparent a message leaves with, from outside the bus, from a handler,
// or to the error queue. The headers carried over are `traceparent` (same
// trace, the sending span as parent) and `tracestate` (unchanged); nothing
// else is copied from a received message into what its handler sends.
// Redeliveries are copies of the received envelope, so both headers
// survive them without a step here.
#pragma once

#include "bus/envelope.hpp"
#include "bus/trace_context.hpp"

namespace bus::detail {

// The trace of one attempt to handle `received`.
struct attempt_trace {
  trace_context received; // its valid traceparent, or the trace derived from its id
  bool traced = false;    // whether it came with a valid traceparent
  span_id span{};         // this attempt's span
};

// The trace of attempt `attempt` (1-based) of `received`, started at `started`.
[[nodiscard]] attempt_trace trace_of_attempt(const envelope& received, int attempt,
                                             time_point started);

// Gives `outgoing`, sent by attempt `attempt` of `received`'s handler, the
// trace of that attempt: traceparent = same trace, the attempt's span as
// parent, same flags; tracestate = the received one, unchanged (none if the
// received traceparent was missing or malformed). A valid traceparent the
// handler set on `outgoing` itself (a span of its own tracer) is kept with
// its tracestate.
void carry_trace(const envelope& received, int attempt, time_point started, envelope& outgoing);

// Marks the error-queue copy of `received`, which failed in attempt
// `attempt`: bus-fault-trace-id and bus-fault-span-id name the trace and the
// failing attempt's span; a message that came without a valid traceparent
// gets one (its derived trace, the failing span as parent) so that the
// copy, when replayed, stays in the same trace.
void stamp_fault_trace(const envelope& received, int attempt, time_point started, envelope& copy);

// A message sent from outside a handler: a valid traceparent given by the
// caller is kept (with its tracestate); otherwise a new trace is started
// from a per-thread random generator, and a tracestate without a valid
// traceparent is dropped (W3C: it means nothing without one).
void start_trace(envelope& outgoing);

} // namespace bus::detail
