// The retry budget: its window arithmetic in a table, its fallbacks, and
// the bound at full scale through decide(): 60 s of 1,000 messages per
// second, every one failing, on virtual time.
#include "bus/policy/retry_budget.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <queue>
#include <random>
#include <stdexcept>
#include <vector>

#include "bus/policy/decide.hpp"
#include "bus/policy/explain.hpp"
#include "bus/policy/json.hpp"

#include <nlohmann/json.hpp>
#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;
using namespace bus::test;

namespace {

bus::retry_budget_settings budget_of(double ratio, int per_second,
                                     bus::duration window = 10s) {
  bus::retry_budget_settings s;
  s.ratio = ratio;
  s.min_retries_per_second = per_second;
  s.window = window;
  return s;
}

} // namespace

TEST_CASE("the defaults are Finagle's: 20% over 10 s with 10 retries per second, then terminal") {
  bus::retry_budget_settings s;
  CHECK(s.ratio == 0.2);
  CHECK(s.window == 10s);
  CHECK(s.min_retries_per_second == 10);
  CHECK(s.fallback == bus::budget_fallback::terminal);
  CHECK(bus::describe(s)
        == "retry budget of the endpoint: 20% of first attempts over 00:00:10 plus 10 "
           "retries/s; when spent: terminal");
}

TEST_CASE("the window arithmetic: deposits, the reserve, spending and expiry") {
  SECTION("the reserve alone is min_retries_per_second times the window") {
    bus::retry_budget b(budget_of(0.2, 10));
    CHECK(b.available(t0) == 100);
    for (int i = 0; i < 100; ++i)
      CHECK(b.try_spend_retry(t0));
    CHECK_FALSE(b.try_spend_retry(t0));
    CHECK(b.available(t0) == 0);
    // Spent retries expire with their slice: a window later it is whole again.
    CHECK(b.available(t0 + 9999ms) == 0);
    CHECK(b.available(t0 + 10s) == 100);
  }
  SECTION("each first attempt adds the ratio, five of them one retry at 20%") {
    bus::retry_budget b(budget_of(0.2, 0));
    CHECK(b.available(t0) == 0);
    for (int i = 0; i < 4; ++i)
      b.record_first_attempt(t0);
    CHECK(b.available(t0) == 0);
    b.record_first_attempt(t0);
    CHECK(b.available(t0) == 1);
    CHECK(b.try_spend_retry(t0));
    CHECK_FALSE(b.try_spend_retry(t0));
  }
  SECTION("deposits slide out of the window slice by slice") {
    bus::retry_budget b(budget_of(0.5, 0));
    for (int i = 0; i < 10; ++i)
      b.record_first_attempt(t0);       // slice 0: 5 retries
    for (int i = 0; i < 10; ++i)
      b.record_first_attempt(t0 + 5s);  // slice 5: 5 more
    CHECK(b.available(t0 + 9999ms) == 10);
    CHECK(b.available(t0 + 10s) == 5);   // slice 0 left the window
    CHECK(b.available(t0 + 14999ms) == 5);
    CHECK(b.available(t0 + 15s) == 0);
  }
  SECTION("a retry spent early is paid back only as its slice expires") {
    bus::retry_budget b(budget_of(1.0, 0));
    b.record_first_attempt(t0);
    CHECK(b.try_spend_retry(t0 + 1s));
    b.record_first_attempt(t0 + 2s);
    CHECK(b.available(t0 + 2s) == 1);
    CHECK(b.available(t0 + 10s) == 0);   // the deposit of t0 gone, the spend of 1 s not yet
    CHECK(b.available(t0 + 11s) == 1);
  }
  SECTION("time that goes backwards counts as the latest time seen") {
    bus::retry_budget b(budget_of(1.0, 0));
    b.record_first_attempt(t0 + 5s);
    b.record_first_attempt(t0 + 4s); // another thread's older reading
    CHECK(b.available(t0 + 14999ms) == 2);
    CHECK(b.available(t0 + 15s) == 0);
  }
  SECTION("a window of 1 s with 10 slices of 100 ms") {
    bus::retry_budget b(budget_of(1.0, 3, 1s));
    CHECK(b.available(t0) == 3);
    b.record_first_attempt(t0);
    CHECK(b.available(t0 + 999ms) == 4);
    CHECK(b.available(t0 + 1s) == 3);
  }
}

TEST_CASE("a budget's settings are validated, each mistake naming its field") {
  auto s = budget_of(-0.5, -1, 0s);
  s.name = "orders";
  const auto found = bus::mistakes(s);
  REQUIRE(found.size() == 3);
  CHECK(found[0] == "retry budget 'orders': ratio -50% is not between 0% and 100000%");
  CHECK(found[1] == "retry budget 'orders': window 00:00:00 is not between 1 s and 24 h");
  CHECK(found[2]
        == "retry budget 'orders': min_retries_per_second -1 is not between 0 and 1000000");
  CHECK(bus::mistakes(bus::retry_budget_settings{}).empty());
}

TEST_CASE("when the budget is spent a failing message takes its fallback and never vanishes") {
  auto generator = fixed_draw{middle};
  const auto chain = [](bus::policy_builder& p) {
    p.on_any().retry(3, 100ms).jitter(false).then_redeliver({1min, 5min, 30min}).jitter(false);
  };
  bus::error_context context;
  context.exception = std::make_exception_ptr(http_error{503});
  context.first_failure = t0;
  context.now = t0;
  const bus::action retry = bus::immediate_retry{100ms};
  const bus::action redelivery = bus::delayed_retry{1min};

  auto with = [&](bus::budget_fallback f) {
    bus::recoverability_options o;
    o.retry_budget = bus::retry_budget_settings{};
    o.retry_budget->fallback = f;
    return config_of(chain, o);
  };
  SECTION("terminal: the rule's terminal action, saying why") {
    auto a = bus::when_budget_spent(with(bus::budget_fallback::terminal), context, retry, generator);
    REQUIRE(std::holds_alternative<bus::move_to_error>(a));
    CHECK(std::get<bus::move_to_error>(a).reason
          == "retry budget spent: immediate retry after 00:00:00.100 refused");
  }
  SECTION("next tier: a refused immediate retry becomes the next redelivery") {
    auto config = with(bus::budget_fallback::next_tier);
    CHECK(summary(bus::when_budget_spent(config, context, retry, generator)) == "redeliver 1min");
    context.delivery_count = 1;
    CHECK(summary(bus::when_budget_spent(config, context, retry, generator)) == "redeliver 5min");
    // A refused redelivery, or one with no redelivery left: the terminal action.
    CHECK(summary(bus::when_budget_spent(config, context, redelivery, generator)) == "error");
    context.delivery_count = 3;
    CHECK(summary(bus::when_budget_spent(config, context, retry, generator)) == "error");
  }
  SECTION("longest delay: a redelivery at the tier's longest delay while redeliveries remain") {
    auto config = with(bus::budget_fallback::longest_delay);
    CHECK(summary(bus::when_budget_spent(config, context, retry, generator)) == "redeliver 30min");
    CHECK(summary(bus::when_budget_spent(config, context, redelivery, generator))
          == "redeliver 30min");
    context.delivery_count = 3;
    CHECK(summary(bus::when_budget_spent(config, context, retry, generator)) == "error");
  }
  SECTION("a fallback redelivery is never scheduled after the message's expiry") {
    auto config = with(bus::budget_fallback::longest_delay);
    context.expires_at = t0 + 10min;
    auto a = bus::when_budget_spent(config, context, retry, generator);
    REQUIRE(std::holds_alternative<bus::move_to_error>(a));
    CHECK(std::get<bus::move_to_error>(a).reason.find("expires") != std::string::npos);
  }
}

namespace {

// One message of the simulation: when its next attempt runs and its counters.
struct pending {
  bus::time_point at;
  int message = 0;
  int immediate = 1;
  std::uint32_t deliveries = 0;
  bool operator>(const pending& o) const { return o.at < at; }
};

struct outcome_counts {
  std::uint64_t first_attempts = 0, retries = 0, denied = 0, terminal = 0, fallback_redeliveries = 0;
};

// 60 s of `per_second` messages, each failing when `fails(message)`, through
// decide() and the budget, as the consumer does: a first attempt deposits,
// a retry decided is charged or refused (then the fallback). Counts what
// happens within the 60 s.
outcome_counts simulate(const bus::recoverability_config& config, int per_second,
                        const std::function<bool(int)>& fails) {
  bus::retry_budget budget(*config.options.retry_budget);
  std::mt19937_64 jitter{42};
  std::priority_queue<pending, std::vector<pending>, std::greater<>> queue;
  const auto end = t0 + 60s;
  const auto spacing = std::chrono::microseconds(1'000'000 / per_second);
  int n = 0;
  for (auto t = t0; t < end; t += std::chrono::duration_cast<bus::time_point::duration>(spacing))
    queue.push(pending{t, n++, 1, 0});
  outcome_counts out;
  const auto error = std::make_exception_ptr(http_error{503});
  while (!queue.empty() && queue.top().at < end) {
    auto p = queue.top();
    queue.pop();
    if (p.immediate == 1 && p.deliveries == 0) {
      budget.record_first_attempt(p.at);
      ++out.first_attempts;
    }
    if (!fails(p.message))
      continue;
    bus::error_context context;
    context.exception = error;
    context.immediate_attempts = p.immediate;
    context.delivery_count = p.deliveries;
    context.first_failure = t0;
    context.now = p.at;
    auto decided = bus::decide(config, context, jitter);
    if (bus::is_retry(decided)) {
      if (budget.try_spend_retry(p.at)) {
        ++out.retries;
      } else {
        ++out.denied;
        decided = bus::when_budget_spent(config, context, decided, jitter);
        if (bus::is_retry(decided))
          ++out.fallback_redeliveries;
      }
    }
    if (auto* r = std::get_if<bus::immediate_retry>(&decided))
      queue.push(pending{p.at + r->delay, p.message, p.immediate + 1, p.deliveries});
    else if (auto* d = std::get_if<bus::delayed_retry>(&decided))
      queue.push(pending{p.at + d->delay, p.message, 1, p.deliveries + 1});
    else
      ++out.terminal;
  }
  return out;
}

} // namespace

TEST_CASE("100% failing for 60 s at 1,000 msg/s: retries <= 20% of first attempts + 10/s") {
  bus::recoverability_options o;
  o.retry_budget = bus::retry_budget_settings{};
  const auto config = config_of(
      [](bus::policy_builder& p) {
        p.on_any().retry(3, 10ms).jitter(false).then_redeliver({1s, 2s}).jitter(false);
      },
      o);
  const auto counts = simulate(config, 1000, [](int) { return true; });
  CHECK(counts.first_attempts == 60'000);
  CHECK(counts.retries <= counts.first_attempts / 5 + 10 * 60);
  // The budget is used, not merely refused: close to its bound.
  CHECK(counts.retries >= counts.first_attempts / 5);
  CHECK(counts.denied > 0);
  // Every refused retry ended in the rule's terminal action: nothing vanished.
  CHECK(counts.fallback_redeliveries == 0);
  CHECK(counts.terminal >= counts.denied);
}

TEST_CASE("1% failing at 1,000 msg/s: no retry is refused") {
  bus::recoverability_options o;
  o.retry_budget = bus::retry_budget_settings{};
  const auto config = config_of(
      [](bus::policy_builder& p) {
        p.on_any().retry(3, 10ms).jitter(false).then_redeliver({1s, 2s}).jitter(false);
      },
      o);
  const auto counts = simulate(config, 1000, [](int message) { return message % 100 == 0; });
  CHECK(counts.first_attempts == 60'000);
  CHECK(counts.denied == 0);
  CHECK(counts.retries > 0);
}

TEST_CASE("explain() and the JSON description show the budget and the expired-message action") {
  bus::recoverability_options o;
  o.retry_budget = bus::retry_budget_settings{};
  o.retry_budget->name = "orders";
  o.expired_messages = bus::expired_action::dead_letter;
  const auto config = config_of([](bus::policy_builder& p) { p.on_any().retry(1); }, o);
  const auto e = bus::explain(config, http_error{503});
  REQUIRE(e.retry_budget);
  CHECK(e.retry_budget->name == "orders");
  CHECK(e.expired_messages == bus::expired_action::dead_letter);
  const auto text = bus::to_string(e);
  CHECK(text.find("retries charged to the retry budget 'orders': 20% of first attempts over "
                  "00:00:10 plus 10 retries/s; when spent: terminal\n")
        != std::string::npos);
  CHECK(text.find("expired messages: dead-lettered with reason 'expired', never run\n")
        != std::string::npos);
  const nlohmann::json j = config;
  CHECK(j["retry_budget"]["name"] == "orders");
  CHECK(j["retry_budget"]["window_ms"] == 10000);
  CHECK(j["retry_budget"]["fallback"] == "terminal");
  CHECK(j["expired_messages"] == "dead_letter");
  const nlohmann::json none = config_of([](bus::policy_builder& p) { p.on_any().retry(1); });
  CHECK(none["retry_budget"].is_null());
  CHECK(none["expired_messages"] == "discard");
}
