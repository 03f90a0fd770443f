// Automatic rate limiting during an outage, on virtual time.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

using bus::test::database_down;

TEST_CASE("a 10-minute outage over 1000 messages is throttled and full speed returns after it") {
  constexpr int messages = 1000;
  constexpr int slots = 4;
  bus::testing::harness h;
  auto outage = std::make_shared<bool>(true);
  int started = 0, ended = 0;
  std::map<std::string, int> attempts_during_outage; // by order id
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().retry(2, 10ms).jitter(false).then_redeliver({30min}).jitter(false);
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(slots)
        .rate_limit(5, 5s, [&] { ++started; }, [&] { ++ended; })
        .handle<order_placed>([&, outage](const order_placed& m) {
          if (*outage) {
            ++attempts_during_outage[m.order_id];
            throw database_down();
          }
        });
    });
  auto& bus = h.start(b);
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus.send("billing", order_placed{"o-" + std::to_string(i), 1}));
  h.run();
  CHECK(started == 0); // 4 slots: 4 failures so far, the threshold is 5
  h.advance(10ms);     // their first retries fail too
  CHECK(started == 1);
  CHECK(h.stats("billing").rate_limited);

  h.advance(10min - 10ms);
  int attempts = 0;
  for (const auto& [id, n] : attempts_during_outage)
    attempts += n;
  // What the wait allows (one attempt per 5 s, plus the first) and what the
  // slots in flight when it tripped could still do (all their retries).
  CHECK(attempts <= 600 / 5 + 1 + slots * 3);
  CHECK(attempts >= 600 / 5);
  CHECK(h.stats("billing").handled == 0);
  CHECK(h.stats("billing").dead_lettered == 0);
  CHECK(h.queue("billing").size() + h.stats("billing").in_flight
          + attempts_during_outage.size() == static_cast<std::size_t>(messages));

  *outage = false;
  h.advance(5s); // the next throttled attempt succeeds
  CHECK(ended == 1);
  CHECK_FALSE(h.stats("billing").rate_limited);
  // Full concurrency: everything not attempted during the outage is
  // handled at once, with no wait between messages.
  CHECK(h.stats("billing").handled
        == static_cast<std::uint64_t>(messages) - attempts_during_outage.size());

  h.advance_until_idle(); // the redeliveries of what failed during the outage
  auto s = h.stats("billing");
  CHECK(s.handled == static_cast<std::uint64_t>(messages));
  CHECK(s.dead_lettered == 0);
  // Only the messages attempted during the outage went down their failure
  // path (a redelivery).
  CHECK(s.redeliveries_scheduled == attempts_during_outage.size());
  CHECK(s.rate_limit_episodes == 1);
  CHECK(h.events_of(event_kind::rate_limit_started).size() == 1);
  CHECK(h.events_of(event_kind::rate_limit_ended).size() == 1);
  std::size_t warned = 0, recovered = 0;
  for (const auto& line : h.log_lines()) {
    warned += line.find("[bus.rate_limit] [warning] rate limiting endpoint 'billing'") == 0;
    recovered += line.find("[bus.rate_limit] [info] endpoint 'billing' handled a message again") == 0;
  }
  CHECK(warned == 1);
  CHECK(recovered == 1);
}

TEST_CASE("a workload that alternates success and failure never trips the rate limit") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(1).rate_limit(2, 5s).handle<order_placed>([](const order_placed& m) {
      if (m.amount < 0)
        throw database_down();
    });
  });
  auto& bus = h.start(b);
  for (int i = 0; i < 200; ++i)
    REQUIRE(bus.send("billing", order_placed{"o-" + std::to_string(i), i % 2 ? 1.0 : -1.0}));
  h.advance_until_idle();
  CHECK(h.events_of(event_kind::rate_limit_started).empty());
  CHECK(h.stats("billing").handled == 100);
  CHECK(h.stats("billing").dead_lettered == 100);
  CHECK(h.elapsed() == 0s); // never waited
}

TEST_CASE("rate limiting throttles the whole endpoint, every message type alike") {
  bus::testing::harness h;
  std::vector<bus::duration> invoices_at;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(4)
        .rate_limit(3, 5s)
        .handle<order_placed>([](const order_placed&) -> void { throw database_down(); })
        .handle<invoice_requested>([&](const invoice_requested&) { invoices_at.push_back(h.elapsed()); });
    });
  auto& bus = h.start(b);
  for (int i = 0; i < 6; ++i)
    REQUIRE(bus.send("billing", order_placed{"o-" + std::to_string(i), 1}));
  h.run();
  CHECK(h.stats("billing").rate_limited);
  // Invoices wait their turn like any message: one at a time, after the
  // wait that follows a failed attempt.
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus.send("billing", invoice_requested{"i-" + std::to_string(i), {}}));
  h.run();
  CHECK(invoices_at.empty());
  h.advance_until_idle();
  REQUIRE(invoices_at.size() == 3);
  CHECK(invoices_at.front() >= 5s);
  CHECK_FALSE(h.stats("billing").rate_limited);
}

TEST_CASE("the attempt that trips the rate limit is followed by the wait like any throttled failure") {
  // One slot, a threshold of 3 and two retries: the message's own last
  // attempt trips it, and the next message must wait. (The breaker's
  // "limited" used to reach the endpoint after the message's "done".)
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) { p.on_any().retry(2, 10ms).jitter(false); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(1).rate_limit(3, 1s).handle<order_placed>(
        [](const order_placed&) -> void { throw database_down(); });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"first", 1}));
  REQUIRE(bus.send("billing", order_placed{"second", 1}));
  h.advance_until_idle();
  // The first fails at 0, 10 and 30 ms; the second, throttled, once
  // (no immediate retries), after the wait.
  auto failed = h.events_of(event_kind::failed);
  REQUIRE(failed.size() == 4);
  CHECK(failed[3].at - failed[0].at == 1030ms);
}
