// The retry budget in the runtime, on virtual time: the bound under a
// total outage, no refusal at a normal failure rate, a budget shared by
// name across endpoints, and configuration mistakes named.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

using bus::test::database_down;

struct traffic {
  std::uint64_t first_attempts = 0;
  bus::endpoint_stats stats;
};

// `seconds` of 1,000 messages per second (one per virtual millisecond) to
// an endpoint with Finagle's default budget; message n fails when
// fails(n). Counts within the run, then lets everything end.
traffic run_traffic(int seconds, const std::function<bool(int)>& fails,
                    bus::testing::harness& h) {
  traffic out;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().retry(3, 10ms).jitter(false).then_redeliver({1s, 2s}).jitter(false);
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      // `fails` by value: handlers still run after this function returns
      // (the caller lets everything end), and the caller's argument is a
      // temporary.
      e.slots(64).retry_budget().handle<order_placed>([fails](const order_placed& m) {
        if (fails(std::stoi(m.order_id)))
          throw database_down();
      });
    });
  auto& bus = h.start(b);
  const int messages = seconds * 1000;
  // Message i at i ms: the run ends before the window after the last
  // begins (the budget's windows count from its first use, message 0).
  for (int i = 0; i < messages; ++i) {
    REQUIRE(bus.send("billing", order_placed{std::to_string(i), 1}));
    if (i + 1 < messages)
      h.advance(1ms);
  }
  h.run();
  out.stats = h.stats("billing");
  out.first_attempts = static_cast<std::uint64_t>(messages);
  return out;
}

} // namespace

// The issue asks for 60 s at 1,000 msg/s; libbus's retry_budget_test runs
// that scale through decide(). Here the runtime runs 20 s of it (20,000
// messages through the actors), which spans two whole windows, so the same
// bound is proved by the same arithmetic, in a fraction of CI's time.
TEST_CASE("100% failing at 1,000 msg/s: retries <= 20% of first attempts + 10/s, and none vanishes") {
  bus::testing::harness h;
  constexpr int seconds = 20;
  auto t = run_traffic(seconds, [](int) { return true; }, h);
  const auto retries = t.stats.immediate_retries + t.stats.redeliveries_scheduled;
  CHECK(retries <= t.first_attempts / 5 + 10 * seconds);
  CHECK(retries >= t.first_attempts / 5); // the budget is spent, not idle
  CHECK(t.stats.retries_denied > 0);
  CHECK(h.events_of(event_kind::retry_denied).size() == t.stats.retries_denied);
  h.advance_until_idle();
  const auto s = h.stats("billing");
  // Each message ended once: a refused retry took the terminal action.
  CHECK(s.dead_lettered == t.first_attempts);
  CHECK(s.in_flight == 0);
  CHECK(h.error_queue("billing").size() == t.first_attempts);
  const auto lines = h.log_lines();
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.rfind("[bus.retry_budget] [warning]", 0) == 0;
        }) == static_cast<long>(s.retries_denied));
}

TEST_CASE("1% failing at 1,000 msg/s: no retry is refused") {
  bus::testing::harness h;
  auto t = run_traffic(20, [](int n) { return n % 100 == 0; }, h);
  CHECK(t.stats.retries_denied == 0);
  CHECK(t.stats.immediate_retries > 0);
  h.advance_until_idle();
  CHECK(h.stats("billing").retries_denied == 0);
  CHECK(h.events_of(event_kind::retry_denied).empty());
}

TEST_CASE("a budget shared by name pools the first attempts of every endpoint that names it") {
  auto run = [](bool shared) {
    bus::testing::harness h;
    bus::retry_budget_settings s;
    s.ratio = 0.5;
    s.min_retries_per_second = 0;
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .add_resilience([](bus::policy_builder& p) { p.on_any().retry(1, 10ms).jitter(false); })
      .endpoint("calm", [&](bus::endpoint_builder& e) {
        if (shared)
          e.retry_budget("orders", s);
        else
          e.retry_budget(s);
        e.handle<order_placed>([](const order_placed&) {});
      })
      .endpoint("failing", [&](bus::endpoint_builder& e) {
        if (shared)
          e.retry_budget("orders", s);
        else
          e.retry_budget(s);
        e.slots(10).handle<invoice_requested>([](const invoice_requested&) { throw database_down(); });
      });
    auto& bus = h.start(b);
    for (int i = 0; i < 10; ++i)
      REQUIRE(bus.send("calm", order_placed{std::to_string(i), 1}));
    h.run();
    for (int i = 0; i < 10; ++i)
      REQUIRE(bus.send("failing", invoice_requested{std::to_string(i), {}}));
    h.advance_until_idle();
    return h.stats("failing");
  };
  // Alone, 10 first attempts at 50% pay for 5 retries; with the 10 of
  // "calm" in the same budget, for all 10.
  const auto alone = run(false);
  CHECK(alone.immediate_retries == 5);
  CHECK(alone.retries_denied == 5);
  const auto pooled = run(true);
  CHECK(pooled.immediate_retries == 10);
  CHECK(pooled.retries_denied == 0);
  CHECK(pooled.dead_lettered == 10);
}

TEST_CASE("a budget's mistakes are refused at build time, naming the field and the endpoints") {
  bus::testing::harness h;
  bus::retry_budget_settings wrong;
  wrong.ratio = -1;
  bus::retry_budget_settings other;
  other.window = 20s;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .endpoint("a", [&](bus::endpoint_builder& e) {
      e.retry_budget("orders").handle<order_placed>([](const order_placed&) {});
    })
    .endpoint("b", [&](bus::endpoint_builder& e) {
      e.retry_budget("orders", other).handle<invoice_requested>([](const invoice_requested&) {});
    })
    .endpoint("c", [&](bus::endpoint_builder& e) {
      e.retry_budget(wrong).handle<order_placed>([](const order_placed&) {});
    });
  auto built = b.build();
  REQUIRE_FALSE(built);
  const auto& text = built.error().message;
  CHECK(text.find("endpoint 'b': retry budget 'orders' is shared with endpoint 'a' with other settings")
        != std::string::npos);
  CHECK(text.find("retry budget: ratio -100% is not between 0% and 100000%") != std::string::npos);
}
