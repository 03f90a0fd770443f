#include "consumer/attempt_spans.hpp"

#include "bus/header_names.hpp"
#include "tracing.hpp"

namespace bus {

std::string_view to_string(attempt_outcome outcome) noexcept {
  switch (outcome) {
    case attempt_outcome::handled: return "handled";
    case attempt_outcome::immediate_retry: return "immediate_retry";
    case attempt_outcome::redelivery: return "redelivery";
    case attempt_outcome::error_queue: return "error_queue";
    case attempt_outcome::discarded: return "discarded";
  }
  return "unknown";
}

namespace detail {

namespace {

// Fills in what every span has and calls the observer; `fill` adds the
// outcome. Runs `fill` only when somebody observes spans.
template <class Fill>
void report(consumer* self, Fill&& fill) {
  const auto& rt = *self->state.rt;
  const auto& observer = rt.config().spans;
  if (!observer)
    return;
  const auto& cur = *self->state.current;
  const auto& msg = *cur.item.message;
  auto trace = trace_of_attempt(msg, cur.attempt, cur.attempt_started);
  attempt_span span;
  span.trace_id = to_hex(trace.received.trace);
  span.span_id = to_hex(trace.span);
  if (trace.traced) {
    span.parent_span_id = to_hex(trace.received.parent);
    if (auto state = msg.headers.find(header::tracestate))
      span.tracestate = std::string(*state);
  }
  span.trace_flags = trace.received.flags;
  span.endpoint = rt.name();
  span.message_id = msg.message_id;
  span.message_type = msg.message_type;
  span.attempt = cur.attempt;
  span.delivery_count = msg.delivery_count;
  span.started = cur.attempt_started;
  span.ended = rt.now();
  fill(span);
  try {
    observer(span);
  } catch (...) {
    // An observer's failure is its own; the message goes on.
  }
}

} // namespace

void report_handled(consumer* self) {
  report(self, [](attempt_span& span) { span.outcome = attempt_outcome::handled; });
}

void report_failed(consumer* self, const action& decided) {
  report(self, [&](attempt_span& span) {
    const auto& rt = *self->state.rt;
    const auto& what = self->state.current->last_what;
    span.exception_type = truncate_utf8(what.type, rt.config().limits.max_message_bytes);
    span.exception_message = truncate_utf8(what.message, rt.config().limits.max_message_bytes);
    std::visit(
      [&](const auto& a) {
        using kind = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<kind, immediate_retry>) {
          span.outcome = attempt_outcome::immediate_retry;
          span.delay = a.delay;
        } else if constexpr (std::is_same_v<kind, delayed_retry>) {
          span.outcome = attempt_outcome::redelivery;
          span.delay = a.delay;
        } else if constexpr (std::is_same_v<kind, move_to_error>) {
          span.outcome = rt.definition().discard_faulted ? attempt_outcome::discarded
                                                         : attempt_outcome::error_queue;
          span.reason = a.reason;
        } else if constexpr (std::is_same_v<kind, discard>) {
          span.outcome = attempt_outcome::discarded;
          span.reason = a.reason;
        } else {
          static_assert(!sizeof(kind), "every recoverability action must have an outcome");
        }
      },
      decided);
    span.reason = truncate_utf8(std::move(span.reason), rt.config().limits.max_message_bytes);
  });
}

} // namespace detail

} // namespace bus
