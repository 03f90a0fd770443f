#include "bus/policy/resilience.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/policy_support.hpp"

using namespace std::chrono_literals;

using namespace bus::test;

namespace {

// The one rule that `configure` builds.
bus::rule only_rule(const configure_fn& configure) {
  const auto rules = rules_of(configure);
  REQUIRE(rules.rules().size() == 1);
  return rules.rules().front();
}

} // namespace

TEST_CASE("each chain of Mocha's table sets its tiers and its terminal action") {
  using bus::terminal_action;
  struct row {
    const char* chain;
    configure_fn configure;
    std::optional<int> retries;
    std::optional<int> redeliveries;
    std::optional<terminal_action> terminal;
  };
  const std::vector<row> table = {
      {".discard()", [](bus::policy_builder& p) { p.on_any().discard(); }, std::nullopt,
       std::nullopt, terminal_action::discard},
      {".dead_letter()", [](bus::policy_builder& p) { p.on_any().dead_letter(); }, std::nullopt,
       std::nullopt, terminal_action::dead_letter},
      {".retry()", [](bus::policy_builder& p) { p.on_any().retry(); }, 3, std::nullopt,
       std::nullopt},
      {".retry(3)", [](bus::policy_builder& p) { p.on_any().retry(3); }, 3, std::nullopt,
       std::nullopt},
      {".redeliver()", [](bus::policy_builder& p) { p.on_any().redeliver(); }, std::nullopt, 3,
       std::nullopt},
      {".retry(3).then_redeliver()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); }, 3, 3, std::nullopt},
      {".retry(3).then_dead_letter()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_dead_letter(); }, 3, std::nullopt,
       terminal_action::dead_letter},
      {".retry(3).then_redeliver().then_dead_letter()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver().then_dead_letter(); }, 3,
       3, terminal_action::dead_letter},
  };
  for (const auto& r : table) {
    INFO(r.chain);
    const auto built = only_rule(r.configure);
    CHECK(built.retry.has_value() == r.retries.has_value());
    if (built.retry && r.retries)
      CHECK(bus::retry_count(*built.retry) == *r.retries);
    CHECK(built.redelivery.has_value() == r.redeliveries.has_value());
    if (built.redelivery && r.redeliveries)
      CHECK(bus::retry_count(*built.redelivery) == *r.redeliveries);
    CHECK(built.terminal == r.terminal);
  }
}

TEST_CASE("each DSL call describes itself back with Mocha's defaults filled in") {
  struct row {
    configure_fn configure;
    const char* text;
  };
  const std::vector<row> table = {
      {[](bus::policy_builder& p) { p.on_any().retry(); }, "on_any().retry(3)"},
      {[](bus::policy_builder& p) { p.on_any().retry(5); }, "on_any().retry(5)"},
      {[](bus::policy_builder& p) { p.on_any().retry(5, 500ms); }, "on_any().retry(5, 500ms)"},
      {[](bus::policy_builder& p) { p.on_any().retry(2, 100ms, bus::backoff::constant); },
       "on_any().retry(2, 100ms, constant)"},
      {[](bus::policy_builder& p) {
         p.on_any().retry({100ms, 500ms, 2s});
       },
       "on_any().retry({100ms, 500ms, 2s})"},
      {[](bus::policy_builder& p) { p.on_any().redeliver(); },
       "on_any().redeliver({5min, 15min, 30min})"},
      {[](bus::policy_builder& p) { p.on_any().redeliver(5, 2min); },
       "on_any().redeliver(5, 2min)"},
      {[](bus::policy_builder& p) { p.on_any().redeliver(2, 10s, bus::backoff::linear); },
       "on_any().redeliver(2, 10s, linear)"},
      {[](bus::policy_builder& p) {
         p.on_any().redeliver({30s, 2min, 10min});
       },
       "on_any().redeliver({30s, 2min, 10min})"},
      {[](bus::policy_builder& p) {
         p.on_any().retry(5, 500ms).then_redeliver({5min, 15min, 30min}).then_dead_letter();
       },
       "on_any().retry(5, 500ms).then_redeliver({5min, 15min, 30min}).then_dead_letter()"},
      {[](bus::policy_builder& p) { p.on_any().retry().jitter(false).max_delay(10s); },
       "on_any().retry(3).jitter(false).max_delay(10s)"},
      {[](bus::policy_builder& p) {
         p.on_any().max_attempts(10).max_time(2h).retry(3).then_redeliver();
       },
       "on_any().max_attempts(10).max_time(2h).retry(3).then_redeliver({5min, 15min, 30min})"},
      {[](bus::policy_builder& p) { p.on<validation_error>().dead_letter(); },
       "on<bus::test::validation_error>().dead_letter()"},
      {[](bus::policy_builder& p) {
         p.on<http_error>([](const http_error& e) {
            return e.status == 429;
          }).retry(3, [](const http_error& e, int) { return e.retry_after; });
       },
       "on<bus::test::http_error>(predicate).retry(3, <delay from the exception>)"},
  };
  for (const auto& r : table)
    CHECK(bus::describe(only_rule(r.configure)) == r.text);
}

TEST_CASE("retry with a count keeps the default delay, backoff, jitter and cap") {
  const auto built = only_rule([](bus::policy_builder& p) { p.on_any().retry(5); });
  REQUIRE(built.retry);
  const auto& delays = std::get<bus::backoff_delays>(built.retry->delays);
  CHECK(delays.count == 5);
  CHECK(delays.base == 200ms);
  CHECK(delays.kind == bus::backoff::exponential);
  CHECK(built.retry->jitter);
  CHECK(built.retry->max_delay == 30s);
}

TEST_CASE("redelivery with a count and a base delay backs off exponentially by default") {
  const auto built = only_rule([](bus::policy_builder& p) { p.on_any().redeliver(4, 2min); });
  REQUIRE(built.redelivery);
  CHECK(bus::nominal_delay(*built.redelivery, 1, nullptr) == 2min);
  CHECK(bus::nominal_delay(*built.redelivery, 4, nullptr) == 16min);
  CHECK(built.redelivery->max_delay == 1h);
}

TEST_CASE("jitter and maximum delay settings apply to the tier they follow") {
  const auto built = only_rule([](bus::policy_builder& p) {
    p.on_any().retry().jitter(false).then_redeliver().max_delay(2h);
  });
  REQUIRE(built.retry);
  REQUIRE(built.redelivery);
  CHECK_FALSE(built.retry->jitter);
  CHECK(built.retry->max_delay == 30s);
  CHECK(built.redelivery->jitter);
  CHECK(built.redelivery->max_delay == 2h);
}

TEST_CASE("the last action called on a kept rule builder defines the whole chain") {
  const auto dead_lettered = only_rule([](bus::policy_builder& p) {
    auto rule = p.on_any();
    rule.retry(3).then_redeliver();
    rule.dead_letter();
  });
  CHECK_FALSE(dead_lettered.retry);
  CHECK_FALSE(dead_lettered.redelivery);
  CHECK(dead_lettered.terminal == bus::terminal_action::dead_letter);

  const auto redelivered = only_rule([](bus::policy_builder& p) {
    auto rule = p.on_any().max_attempts(4);
    rule.retry(3).then_dead_letter();
    rule.redeliver();
  });
  CHECK_FALSE(redelivered.retry);
  CHECK(redelivered.redelivery);
  CHECK_FALSE(redelivered.terminal);
  CHECK(redelivered.max_attempts == 4); // the budget belongs to the rule, not the chain
}

TEST_CASE("a predicate sees the typed exception") {
  const auto built = only_rule([](bus::policy_builder& p) {
    p.on<http_error>([](const http_error& e) { return e.status == 429; }).retry();
  });
  REQUIRE(built.predicate);
  CHECK(built.predicate(bus::caught_exception(std::make_exception_ptr(http_error{429}))));
  CHECK_FALSE(built.predicate(bus::caught_exception(std::make_exception_ptr(http_error{503}))));
}

TEST_CASE("a delay function sees the typed exception and the attempt number") {
  const auto built = only_rule([](bus::policy_builder& p) {
    p.on<http_error>().retry(
        2, [](const http_error& e, int attempt) { return e.retry_after * attempt; });
  });
  REQUIRE(built.retry);
  const auto throttled = std::make_exception_ptr(http_error{429, 3s});
  CHECK(bus::nominal_delay(*built.retry, 1, throttled) == 3s);
  CHECK(bus::nominal_delay(*built.retry, 2, throttled) == 6s);
  CHECK_FALSE(built.retry->jitter);
}

TEST_CASE("a catch-all delay function sees the exception pointer") {
  const auto built = only_rule([](bus::policy_builder& p) {
    p.on_any().redeliver(1, [](const std::exception_ptr& e, int) { return e ? 1min : 2min; });
  });
  REQUIRE(built.redelivery);
  CHECK(bus::nominal_delay(*built.redelivery, 1, std::make_exception_ptr(42)) == 1min);
}

TEST_CASE("rules keep the order of their on calls") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    auto first = p.on<validation_error>();
    auto second = p.on<http_error>();
    p.on_any().retry();
    second.retry(2); // stage objects stay valid while later rules are added
    first.dead_letter();
  });
  REQUIRE(rules.rules().size() == 3);
  CHECK(bus::describe(rules.rules()[0]) == "on<bus::test::validation_error>().dead_letter()");
  CHECK(bus::describe(rules.rules()[1]) == "on<bus::test::http_error>().retry(2)");
  CHECK(bus::describe(rules.rules()[2]) == "on_any().retry(3)");
}

TEST_CASE("the parameterless add_resilience registers a catch-all that retries then redelivers") {
  bus::rule_set rules;
  rules.add_resilience();
  REQUIRE(rules.rules().size() == 1);
  CHECK(bus::describe(rules.rules()[0])
        == "on_any().retry(3).then_redeliver({5min, 15min, 30min})");
}

TEST_CASE("a later add_resilience replaces the catch-all of the parameterless one") {
  bus::rule_set rules;
  rules.add_resilience();
  rules.add_resilience([](bus::policy_builder& p) {
    p.on<validation_error>().dead_letter();
    p.on_any().retry(5);
  });
  REQUIRE(rules.rules().size() == 2);
  CHECK(bus::describe(rules.rules()[0]) == "on<bus::test::validation_error>().dead_letter()");
  CHECK(bus::describe(rules.rules()[1]) == "on_any().retry(5)");
}

TEST_CASE("a configure callback that throws adds none of its rules") {
  bus::rule_set rules;
  CHECK_THROWS_AS(rules.add_resilience([](bus::policy_builder& p) {
    p.on_any().retry();
    throw std::runtime_error("configuration failed half way");
  }),
                  std::runtime_error);
  CHECK(rules.empty());
}

TEST_CASE("a rule started without an action has none") {
  const auto rules = rules_of([](bus::policy_builder& p) { (void)p.on<validation_error>(); });
  REQUIRE(rules.rules().size() == 1);
  CHECK_FALSE(bus::has_action(rules.rules()[0]));
}
