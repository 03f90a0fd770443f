#include "tracing.hpp"

#include <random>

#include "bus/header_names.hpp"

namespace bus::detail {

namespace {

std::optional<trace_context> valid_traceparent(const envelope& msg) {
  auto text = msg.headers.find(header::traceparent);
  return text ? parse_traceparent(*text) : std::nullopt;
}

std::int64_t nanoseconds(time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

} // namespace

attempt_trace trace_of_attempt(const envelope& received, int attempt, time_point started) {
  attempt_trace out;
  if (auto context = valid_traceparent(received)) {
    out.received = *context;
    out.traced = true;
  } else {
    out.received = trace_for_untraced(received.message_id);
  }
  out.span = attempt_span_id(out.received.trace, received.message_id, received.delivery_count,
                             attempt, nanoseconds(started));
  return out;
}

void carry_trace(const envelope& received, int attempt, time_point started, envelope& outgoing) {
  if (valid_traceparent(outgoing))
    return; // the handler's own span
  auto trace = trace_of_attempt(received, attempt, started);
  outgoing.headers.set(header::traceparent,
                       format_traceparent(child_of(trace.received, trace.span)));
  auto state = trace.traced ? received.headers.find(header::tracestate) : std::nullopt;
  if (state)
    outgoing.headers.set(header::tracestate, std::string(*state));
  else
    outgoing.headers.erase(header::tracestate);
}

void stamp_fault_trace(const envelope& received, int attempt, time_point started, envelope& copy) {
  auto trace = trace_of_attempt(received, attempt, started);
  copy.headers.set(header::fault_trace_id, to_hex(trace.received.trace));
  copy.headers.set(header::fault_span_id, to_hex(trace.span));
  if (!trace.traced) {
    copy.headers.set(header::traceparent, format_traceparent(child_of(trace.received, trace.span)));
    copy.headers.erase(header::tracestate);
  }
}

void start_trace(envelope& outgoing) {
  if (valid_traceparent(outgoing))
    return;
  thread_local std::mt19937_64 generator{std::random_device{}()};
  auto hi = generator();
  auto lo = generator();
  outgoing.headers.set(header::traceparent, format_traceparent(new_trace(hi, lo, generator())));
  outgoing.headers.erase(header::tracestate);
}

} // namespace bus::detail
