// W3C trace context on a real broker: the trace id of a message survives
// an immediate retry, a redelivery through RabbitMQ's delay levels (the
// envelope's headers go out to the broker and come back), the error
// queue, and what the handler sends on the redelivery.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/header_names.hpp"
#include "bus/trace_context.hpp"
#include "support/delivery_collector.hpp"
#include "support/envelope_text.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::attempt_outcome;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

using bus::test::header_or_missing;

constexpr const char* sender_traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
constexpr const char* sender_trace = "0af7651916cd43dd8448eb211c80319c";
constexpr const char* sender_span = "b7ad6b7169203331";
constexpr const char* sender_state = "congo=t61rcWkgMzE";

// Every span, and a wake-up once `n` attempts ended the message's journey
// (handled or error queue).
struct span_log {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bus::attempt_span> spans;
  int endings = 0;

  bus::span_observer observer() {
    return [this](const bus::attempt_span& s) {
      std::lock_guard<std::mutex> guard(mutex);
      spans.push_back(s);
      if (s.outcome == attempt_outcome::handled || s.outcome == attempt_outcome::error_queue)
        ++endings;
      changed.notify_all();
    };
  }

  bool wait_for(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 60s, [&] { return endings >= n; });
  }

  std::vector<bus::attempt_span> of(const std::string& order_id_message) {
    std::lock_guard<std::mutex> guard(mutex);
    std::vector<bus::attempt_span> out;
    for (const auto& s : spans)
      if (s.message_id == order_id_message)
        out.push_back(s);
    return out;
  }
};

} // namespace

TEST_CASE("on RabbitMQ one trace id runs through an immediate retry, a redelivery by delay level, the error queue and the handler's send") {
  auto endpoint = bus::test::unique_name("traced");
  auto invoices = bus::test::unique_name("traced_invoices");
  span_log log;
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    bus::bus_builder b{sys};
    auto transport = bus::test::connect_with_defaults();
    REQUIRE(transport->declare_queue(invoices));
    b.transport(transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .observe_spans(log.observer())
      .message<order_placed>(bus::test::unique_name("order_placed"))
      .message<invoice_requested>(bus::test::unique_name("invoice_requested"))
      .add_resilience([](bus::policy_builder& p) { p.on_any().retry({10ms}).then_redeliver({1s}); })
      .endpoint(endpoint, [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([invoices](const order_placed& m, bus::handler_context& ctx) {
          // Fails on the first delivery; "fatal" orders fail every time.
          if (m.amount < 0 || ctx.delivery_count() == 0)
            throw std::runtime_error("database unavailable");
          if (!ctx.send(invoices, invoice_requested{m.order_id, {"line"}}))
            throw std::runtime_error("cannot stage the invoice");
        });
      });
    auto bus = b.build();
    REQUIRE(bus);
    REQUIRE((*bus)->start());
    bus::send_options traced;
    traced.headers.set(bus::header::traceparent, sender_traceparent);
    traced.headers.set(bus::header::tracestate, sender_state);
    REQUIRE((*bus)->send(endpoint, order_placed{"healed", 1}, traced));
    REQUIRE((*bus)->send(endpoint, order_placed{"fatal", -1}, traced));
    REQUIRE(log.wait_for(2));
    (*bus)->stop();
    CHECK((*bus)->stats(endpoint)->handled == 1);
    CHECK((*bus)->stats(endpoint)->dead_lettered == 1);
  }

  // Every attempt of both messages, on both deliveries, in the sender's trace.
  {
    std::lock_guard<std::mutex> guard(log.mutex);
    REQUIRE(log.spans.size() == 7); // healed: 2 + 1; fatal: 2 + 2
    for (const auto& s : log.spans) {
      CHECK(s.trace_id == sender_trace);
      CHECK(s.parent_span_id == sender_span);
      CHECK(s.tracestate == sender_state);
    }
    int redelivered = 0;
    for (const auto& s : log.spans)
      redelivered += s.delivery_count == 1;
    CHECK(redelivered == 3); // came back from the broker's delay level with its headers
  }

  auto reader = bus::test::connect_with_defaults();
  bus::test::delivery_collector sent, errors;
  REQUIRE(reader->consume(invoices, 10, sent.handler()));
  REQUIRE(reader->consume(endpoint + "_error", 10, errors.handler()));
  REQUIRE(sent.wait_for(1));
  REQUIRE(errors.wait_for(1));

  // The invoice: the sender's trace, the handling attempt's span as parent.
  const auto& invoice = *sent.items().at(0).message;
  auto carried = bus::parse_traceparent(header_or_missing(invoice, bus::header::traceparent));
  REQUIRE(carried);
  CHECK(bus::to_hex(carried->trace) == sender_trace);
  std::string handled_span;
  for (const auto& s : log.spans)
    if (s.outcome == attempt_outcome::handled)
      handled_span = s.span_id;
  CHECK(bus::to_hex(carried->parent) == handled_span);
  CHECK(header_or_missing(invoice, bus::header::tracestate) == sender_state);

  // The error queue's copy: the sender's traceparent and the failing span.
  const auto& failed = *errors.items().at(0).message;
  auto fatal = log.of(failed.message_id);
  REQUIRE(fatal.size() == 4);
  CHECK(fatal.back().outcome == attempt_outcome::error_queue);
  CHECK(header_or_missing(failed, bus::header::traceparent) == sender_traceparent);
  CHECK(header_or_missing(failed, bus::header::tracestate) == sender_state);
  CHECK(header_or_missing(failed, bus::header::fault_trace_id) == sender_trace);
  CHECK(header_or_missing(failed, bus::header::fault_span_id) == fatal.back().span_id);

  for (const auto& d : sent.items())
    CHECK(reader->ack(d.tag));
  for (const auto& d : errors.items())
    CHECK(reader->ack(d.tag));
}
