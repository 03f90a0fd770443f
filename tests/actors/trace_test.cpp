// W3C trace context through the runtime, on virtual time: one trace id
// from a send outside the bus through an immediate retry, a redelivery,
// the error queue's copy and what a handler sends; one span per attempt
// for the span observer.
#include <catch2/catch.hpp>

#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "bus/trace_context.hpp"
#include "support/envelope_text.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::attempt_outcome;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

using bus::test::header_or_missing;

constexpr const char* sender_traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr const char* sender_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* sender_span = "00f067aa0ba902b7";
constexpr const char* sender_state = "vendor=abc,other=1";

bus::trace_context traceparent_of(const bus::envelope& e) {
  auto parsed = bus::parse_traceparent(header_or_missing(e, bus::header::traceparent));
  REQUIRE(parsed);
  return *parsed;
}

bus::send_options traced() {
  bus::send_options o;
  o.headers.set(bus::header::traceparent, sender_traceparent);
  o.headers.set(bus::header::tracestate, sender_state);
  return o;
}

// A bus with "billing", whose handler fails on the first delivery of a
// message (both attempts: one immediate retry, then a redelivery) and, on
// the redelivery, sends an invoice to "invoicing"; "-fatal" orders fail
// every time and end on the error queue.
struct traced_bus {
  bus::testing::harness h;
  std::vector<bus::attempt_span> spans;
  bus::message_bus* bus = nullptr;

  traced_bus() {
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .add_resilience([](bus::policy_builder& p) {
       p.on_any().retry({10ms}).then_redeliver({1min});
     })
      .observe_spans([this](const bus::attempt_span& s) { spans.push_back(s); })
      .endpoint("billing", [](bus::endpoint_builder& e) {
        e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
          if (m.amount < 0 || ctx.delivery_count() == 0)
            throw std::runtime_error("database unavailable");
          REQUIRE(ctx.send("invoicing", invoice_requested{m.order_id, {"line"}}));
        });
      })
      .endpoint("alerts", [](bus::endpoint_builder& e) {
        e.handle<bus::fault<order_placed>>([](const bus::fault<order_placed>&) {});
      });
    bus = &h.start(b);
    REQUIRE(h.transport().declare_queue("invoicing"));
  }

  std::vector<bus::attempt_span> spans_of(const std::string& message_id) const {
    std::vector<bus::attempt_span> out;
    for (const auto& s : spans)
      if (s.message_id == message_id)
        out.push_back(s);
    return out;
  }
};

} // namespace

TEST_CASE("one trace id runs through an immediate retry, a redelivery and what the handler sends") {
  traced_bus t;
  REQUIRE(t.bus->send("billing", order_placed{"o-1", 10}, traced()));
  t.h.advance_until_idle();

  auto received = t.h.events_of(bus::event_kind::received);
  REQUIRE(received.size() == 2); // the first delivery and the redelivery
  auto spans = t.spans_of(received.front().message_id);
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].outcome == attempt_outcome::immediate_retry);
  CHECK((spans[0].attempt == 1 && spans[0].delivery_count == 0));
  CHECK(spans[1].outcome == attempt_outcome::redelivery);
  CHECK((spans[1].attempt == 2 && spans[1].delivery_count == 0));
  CHECK(spans[2].outcome == attempt_outcome::handled);
  CHECK((spans[2].attempt == 1 && spans[2].delivery_count == 1));
  for (const auto& s : spans) {
    CHECK(s.trace_id == sender_trace);
    CHECK(s.parent_span_id == sender_span); // every attempt is a child of the sender
    CHECK(s.tracestate == sender_state);
    CHECK(s.trace_flags == 0x01);
    CHECK(s.span_id.size() == 16);
    CHECK(s.ended >= s.started);
  }
  CHECK(spans[0].span_id != spans[1].span_id);
  CHECK(spans[1].span_id != spans[2].span_id);
  CHECK(spans[0].exception_message == "database unavailable");
  CHECK(spans[1].delay > 0ms); // about a minute, jittered

  // The invoice the handler sent: same trace, the handling attempt's span
  // as its parent, tracestate unchanged.
  auto invoices = t.h.queue("invoicing");
  REQUIRE(invoices.size() == 1);
  auto carried = traceparent_of(*invoices[0]);
  CHECK(bus::to_hex(carried.trace) == sender_trace);
  CHECK(bus::to_hex(carried.parent) == spans[2].span_id);
  CHECK(carried.flags == 0x01);
  CHECK(header_or_missing(*invoices[0], bus::header::tracestate) == sender_state);
}

TEST_CASE("the error queue's copy keeps the trace and names the span of the attempt that failed last") {
  traced_bus t;
  REQUIRE(t.bus->send("billing", order_placed{"o-fatal", -1}, traced()));
  t.h.advance_until_idle();

  auto errors = t.h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  const auto& copy = *errors[0];
  auto spans = t.spans_of(copy.message_id);
  // Two attempts per delivery, two deliveries.
  REQUIRE(spans.size() == 4);
  CHECK(spans[3].outcome == attempt_outcome::error_queue);
  CHECK(spans[3].reason != "");
  for (const auto& s : spans)
    CHECK(s.trace_id == sender_trace);
  CHECK(header_or_missing(copy, bus::header::traceparent) == sender_traceparent);
  CHECK(header_or_missing(copy, bus::header::tracestate) == sender_state);
  CHECK(header_or_missing(copy, bus::header::fault_trace_id) == sender_trace);
  CHECK(header_or_missing(copy, bus::header::fault_span_id) == spans[3].span_id);

  // fault<order_placed>, raised as it ended: in the same trace, a child of
  // the attempt that failed last.
  std::vector<bus::attempt_span> alerts;
  for (const auto& s : t.spans)
    if (s.endpoint == "alerts")
      alerts.push_back(s);
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0].trace_id == sender_trace);
  CHECK(alerts[0].parent_span_id == spans[3].span_id);
  CHECK(alerts[0].tracestate == sender_state);
}

TEST_CASE("a message that arrives without trace context gets a trace of its own, kept through its retries") {
  traced_bus t;
  // Straight onto the queue, as a producer that does not trace would.
  bus::envelope untraced;
  untraced.message_id = "m-untraced";
  untraced.message_type = "order_placed";
  untraced.body = *t.bus->registry().make_body(order_placed{"o-fatal", -1});
  untraced.headers.set(bus::header::tracestate, "orphan=1"); // meaningless without traceparent
  REQUIRE(t.h.transport().send("billing", std::move(untraced)));
  t.h.advance_until_idle();

  auto spans = t.spans_of("m-untraced");
  REQUIRE(spans.size() == 4);
  for (const auto& s : spans) {
    CHECK(s.trace_id == spans[0].trace_id);
    CHECK(s.parent_span_id.empty()); // a new trace: its spans are roots
    CHECK(s.tracestate.empty());
  }
  auto errors = t.h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  auto written = traceparent_of(*errors[0]);
  CHECK(bus::to_hex(written.trace) == spans[0].trace_id);
  CHECK(bus::to_hex(written.parent) == spans[3].span_id);
  CHECK(header_or_missing(*errors[0], bus::header::tracestate) == "<missing>");
  CHECK(header_or_missing(*errors[0], bus::header::fault_trace_id) == spans[0].trace_id);
}

TEST_CASE("a send from outside a handler starts a trace unless it brings a valid one") {
  traced_bus t;
  REQUIRE(t.h.transport().declare_queue("elsewhere"));
  REQUIRE(t.bus->send("elsewhere", order_placed{"plain", 1}));
  REQUIRE(t.bus->send("elsewhere", order_placed{"plain", 2}));
  REQUIRE(t.bus->send("elsewhere", order_placed{"kept", 3}, traced()));
  auto malformed = traced();
  malformed.headers.set(bus::header::traceparent, "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
  REQUIRE(t.bus->send("elsewhere", order_placed{"malformed", 4}, malformed));
  t.h.run();

  auto sent = t.h.queue("elsewhere");
  REQUIRE(sent.size() == 4);
  auto first = traceparent_of(*sent[0]);
  auto second = traceparent_of(*sent[1]);
  CHECK(first.trace != second.trace); // each send outside a handler is a trace of its own
  CHECK(first.flags == 0x01);
  CHECK(header_or_missing(*sent[2], bus::header::traceparent) == sender_traceparent);
  CHECK(header_or_missing(*sent[2], bus::header::tracestate) == sender_state);
  // A malformed traceparent is no error: a new trace replaces it, and its
  // tracestate, meaningless now, is dropped.
  auto replaced = traceparent_of(*sent[3]);
  CHECK(bus::to_hex(replaced.trace) != sender_trace);
  CHECK(header_or_missing(*sent[3], bus::header::tracestate) == "<missing>");
}
