// Deadlines in the runtime, on virtual time: a redelivery is never
// scheduled past the retry time limit, an expired message never reaches
// its handler (discarded or dead-lettered with reason "expired"), and a
// handler's sends inherit the remaining deadline when the endpoint opts in.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "bus/deadline.hpp"
#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

using bus::test::database_down;

} // namespace

TEST_CASE("redeliveries every 10 h with a 24 h limit end at 20 h, not 30 h") {
  bus::testing::harness h;
  std::vector<bus::duration> attempts_at;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().redeliver({10h, 10h, 10h, 10h}).jitter(false).max_delay(10h);
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        attempts_at.push_back(h.elapsed());
        throw database_down();
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance_until_idle();
  CHECK(attempts_at == std::vector<bus::duration>{0h, 10h, 20h});
  const auto ended = h.events_of(event_kind::dead_lettered);
  REQUIRE(ended.size() == 1);
  REQUIRE(h.error_queue("billing").size() == 1);
  CHECK(h.error_queue("billing")[0]->headers.find(bus::header::fault_reason)->find(
          "would come after the retry time limit of 24:00:00")
        != std::string_view::npos);
  CHECK(h.stats("billing").redeliveries_scheduled == 2);
}

TEST_CASE("an expired message never reaches its handler") {
  bus::testing::harness h;
  std::vector<std::string> handled;
  bool first_fails = true;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) { p.on_any().retry(1, 2min).jitter(false).max_delay(2min); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([&](const order_placed& m) {
        handled.push_back(m.order_id);
        if (m.order_id == "slow" && first_fails) {
          first_fails = false;
          throw database_down(); // its retry holds the only slot for 2 min
        }
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"slow", 1}));
  bus::send_options ttl;
  ttl.time_to_live = 1min;
  REQUIRE(bus.send("billing", order_placed{"short-lived", 1}, ttl));
  bus::send_options past;
  past.expires_at = bus::time_point{} + 1ms; // long gone
  REQUIRE(bus.send("billing", order_placed{"gone", 1}, past));
  h.advance_until_idle();
  // "short-lived" waited 2 min for the slot and expired meanwhile.
  CHECK(handled == std::vector<std::string>{"slow", "slow"});
  const auto s = h.stats("billing");
  CHECK(s.expired == 2);
  CHECK(s.discarded == 2); // the default
  CHECK(s.handled == 1);
  CHECK(h.events_of(event_kind::expired).size() == 2);
  CHECK(h.error_queue("billing").empty());
}

TEST_CASE("an endpoint may dead-letter expired messages with the reason 'expired'") {
  bus::testing::harness h;
  int calls = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.expired_messages(bus::expired_action::dead_letter)
        .handle<order_placed>([&](const order_placed&) { ++calls; });
    });
  auto& bus = h.start(b);
  bus::send_options now;
  now.time_to_live = 0ms; // expires as it is sent
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, now));
  h.advance_until_idle();
  CHECK(calls == 0);
  REQUIRE(h.error_queue("billing").size() == 1);
  const auto& copy = *h.error_queue("billing")[0];
  CHECK(copy.headers.find(bus::header::fault_reason) == std::optional<std::string_view>("expired"));
  CHECK(copy.headers.find(bus::header::fault_exception_type)
        == std::optional<std::string_view>("bus::message_expired"));
  CHECK(h.stats("billing").expired == 1);
  CHECK(h.stats("billing").dead_lettered == 1);
}

TEST_CASE("no retry is scheduled past a message's expiry: its terminal action comes at once") {
  bus::testing::harness h;
  int calls = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().retry(1, 1s).jitter(false).then_redeliver({5min}).jitter(false);
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        ++calls;
        throw database_down();
      });
    });
  auto& bus = h.start(b);
  bus::send_options ttl;
  ttl.time_to_live = 1min;
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, ttl));
  const auto waited = h.advance_until_idle();
  CHECK(calls == 2); // the first attempt and its retry; the redelivery would come too late
  CHECK(waited < 1min);
  CHECK(h.stats("billing").redeliveries_scheduled == 0);
  CHECK(h.stats("billing").dead_lettered == 1);
}

TEST_CASE("a handler's sends inherit the remaining deadline only when the endpoint opts in") {
  for (bool inherit : {false, true}) {
    INFO("inherit " << inherit);
    bus::testing::harness h;
    std::optional<bus::time_point> order_expiry, invoice_expiry;
    bool invoiced = false;
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .endpoint("orders", [&](bus::endpoint_builder& e) {
        e.inherit_deadline(inherit).handle<order_placed>(
          [&](const order_placed& m, bus::handler_context& ctx) {
            order_expiry = bus::expires_at(ctx.message());
            (void)ctx.send("invoices", invoice_requested{m.order_id, {}});
          });
      })
      .endpoint("invoices", [&](bus::endpoint_builder& e) {
        e.handle<invoice_requested>([&](const invoice_requested&, bus::handler_context& ctx) {
          invoiced = true;
          invoice_expiry = bus::expires_at(ctx.message());
        });
      });
    auto& bus = h.start(b);
    bus::send_options ttl;
    ttl.time_to_live = 10min;
    REQUIRE(bus.send("orders", order_placed{"o-1", 1}, ttl));
    h.advance_until_idle();
    REQUIRE(invoiced);
    REQUIRE(order_expiry.has_value());
    if (inherit)
      CHECK(invoice_expiry == order_expiry);
    else
      CHECK_FALSE(invoice_expiry.has_value());
  }
}

TEST_CASE("a message that expires while it waits for an immediate retry is not run again") {
  bus::testing::harness h;
  int calls = 0;
  auto b = h.builder();
  // A custom policy that ignores the expiry: the runtime still checks
  // before the retry runs.
  b.message<order_placed>("order_placed")
    .recoverability_policy([](const bus::recoverability_config&, const bus::error_context&,
                              bus::random_source) { return bus::action{bus::immediate_retry{1min}}; })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        ++calls;
        throw database_down();
      });
    });
  auto& bus = h.start(b);
  bus::send_options ttl;
  ttl.time_to_live = 30s;
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, ttl));
  h.advance_until_idle();
  CHECK(calls == 1);
  const auto s = h.stats("billing");
  CHECK(s.expired == 1);
  CHECK(s.discarded == 1);
  CHECK(s.immediate_retries == 1);
  const auto expired = h.events_of(event_kind::expired);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].attempt == 2);
  CHECK(expired[0].detail == "the message expired 00:00:30 before attempt 2 (bus-expires-at)");
}
