#include "bus/policy/explain.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/decide.hpp"
#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;

using namespace bus::test;

namespace {

// The summaries of the planned actions: "retry 200ms", "redeliver 5min",
// "error", "discard".
std::vector<std::string> plan_of(const bus::explanation& e) {
  std::vector<std::string> out;
  for (const auto& step : e.plan)
    out.push_back(bus::test::summary(step.then));
  return out;
}

} // namespace

TEST_CASE("explain shows the rule and the plan of each chain of Mocha's table, jitter off") {
  const std::vector<std::string> retries = {"retry 200ms", "retry 400ms", "retry 800ms"};
  std::vector<std::string> retry_then_redeliver;
  for (const char* redelivery : {"redeliver 5min", "redeliver 15min", "redeliver 30min"}) {
    retry_then_redeliver.insert(retry_then_redeliver.end(), retries.begin(), retries.end());
    retry_then_redeliver.push_back(redelivery);
  }
  retry_then_redeliver.insert(retry_then_redeliver.end(), retries.begin(), retries.end());
  retry_then_redeliver.push_back("error");

  struct row {
    configure_fn configure;
    std::string rule_text;
    std::vector<std::string> plan;
  };
  const std::vector<row> table = {
      {[](bus::policy_builder& p) { p.on_any().discard(); }, "on_any().discard()", {"discard"}},
      {[](bus::policy_builder& p) { p.on_any().dead_letter(); },
       "on_any().dead_letter()",
       {"error"}},
      {[](bus::policy_builder& p) { p.on_any().retry(); },
       "on_any().retry(3)",
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {[](bus::policy_builder& p) { p.on_any().retry(3); },
       "on_any().retry(3)",
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {[](bus::policy_builder& p) { p.on_any().redeliver(); },
       "on_any().redeliver({5min, 15min, 30min})",
       {"redeliver 5min", "redeliver 15min", "redeliver 30min", "error"}},
      {[](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); },
       "on_any().retry(3).then_redeliver({5min, 15min, 30min})", retry_then_redeliver},
      {[](bus::policy_builder& p) { p.on_any().retry(3).then_dead_letter(); },
       "on_any().retry(3).then_dead_letter()",
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {[](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver().then_dead_letter(); },
       "on_any().retry(3).then_redeliver({5min, 15min, 30min}).then_dead_letter()",
       retry_then_redeliver},
  };
  for (const auto& r : table) {
    INFO(r.rule_text);
    const auto e = bus::explain(config_of(r.configure), validation_error{});
    CHECK(e.rule == std::optional<std::size_t>(0));
    CHECK(e.rule_text == r.rule_text);
    CHECK(plan_of(e) == r.plan);
    CHECK_FALSE(e.truncated);
  }
}

TEST_CASE("explain numbers each planned attempt by delivery and try, with the time since the first "
          "failure") {
  const auto e =
      bus::explain(config_of([](bus::policy_builder& p) {
                     p.on_any().retry(2, 1s, bus::backoff::constant).then_redeliver({10min});
                   }),
                   validation_error{});
  struct row {
    int attempt;
    std::uint32_t delivery;
    int immediate_attempt;
    bus::duration elapsed;
  };
  const std::vector<row> expected = {
      {1, 0, 1, 0s},         {2, 0, 2, 1s},         {3, 0, 3, 2s},
      {4, 1, 1, 10min + 2s}, {5, 1, 2, 10min + 3s}, {6, 1, 3, 10min + 4s},
  };
  REQUIRE(e.plan.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(e.plan[i].attempt == expected[i].attempt);
    CHECK(e.plan[i].delivery == expected[i].delivery);
    CHECK(e.plan[i].immediate_attempt == expected[i].immediate_attempt);
    CHECK(e.plan[i].elapsed == expected[i].elapsed);
  }
}

TEST_CASE("explain says why a rule matched: its scope, its type's rank and its predicate") {
  const auto config = config_of(bus::scope_level::consumer, [](bus::policy_builder& p) {
    p.on<transport_error>().redeliver();
    p.on<too_many_requests>([](const too_many_requests&) { return false; }).dead_letter();
    p.on<http_error>([](const http_error& e) { return e.status == 429; }).retry(5);
    p.on_any().discard();
  });
  const auto e = bus::explain(config, too_many_requests{});
  CHECK(e.scope == bus::scope_level::consumer);
  CHECK(e.exception_type == "bus::test::too_many_requests");
  CHECK(e.rule == std::optional<std::size_t>(2));
  CHECK(e.rule_text == "on<bus::test::http_error>(predicate).retry(5)");
  CHECK(e.reason
        == "rule #3 on<bus::test::http_error>(predicate) of the consumer scope matches: its "
           "type is "
           "a base of the thrown type, 1 more specific registered type(s) declined; its predicate "
           "holds; 1 rule(s) consulted before it declined");
  REQUIRE(e.candidates.size() == 4);
  CHECK(e.candidates[0].name == "rule #2 on<bus::test::too_many_requests>(predicate)");
  CHECK(e.candidates[0].exact_type);
  CHECK(e.candidates[0].verdict == bus::match_verdict::predicate_false);
  CHECK(e.candidates[1].name == "rule #3 on<bus::test::http_error>(predicate)");
  CHECK(e.candidates[1].rank == 1);
  CHECK(e.candidates[1].verdict == bus::match_verdict::matched);
  CHECK(e.candidates[3].name == "rule #4 on_any()");
  CHECK(e.candidates[3].verdict == bus::match_verdict::not_consulted);
}

TEST_CASE("explain of an exact match and of the catch-all") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<validation_error>().dead_letter();
    p.on_any().retry();
  });
  CHECK(bus::explain(config, validation_error{}).reason
        == "rule #1 on<bus::test::validation_error>() of the bus scope matches: it names the "
           "thrown "
           "type, the most specific registered type that catches it");
  CHECK(bus::explain(config, 42).reason
        == "rule #2 on_any() of the bus scope matches as the catch-all");
}

TEST_CASE("explain when no rule matches, and when no scope defines rules") {
  const auto some_rules = config_of(bus::scope_level::transport,
                                    [](bus::policy_builder& p) { p.on<http_error>().retry(); });
  const auto e = bus::explain(some_rules, validation_error{});
  CHECK_FALSE(e.rule);
  CHECK(
      e.reason
      == "no rule of the transport scope matches bus::test::validation_error: the error queue");
  CHECK(plan_of(e) == std::vector<std::string>{"error"});

  const auto nothing = bus::make_recoverability_config(bus::recoverability_scopes{});
  REQUIRE(nothing);
  CHECK(bus::explain(*nothing, validation_error{}).reason
        == "no scope defines exception policy rules: every failure goes to the error queue");
}

TEST_CASE("explain of an unrecoverable exception names no rule") {
  bus::recoverability_options options;
  options.unrecoverable.add<validation_error>();
  const auto config = config_of(
      bus::scope_level::bus, [](bus::policy_builder& p) { p.on_any().retry(); },
      std::move(options));
  const auto e = bus::explain(config, validation_error{});
  CHECK_FALSE(e.rule);
  CHECK(e.reason
        == "bus::test::validation_error is unrecoverable (declared as "
           "bus::test::validation_error): the error queue at once");
  CHECK(plan_of(e) == std::vector<std::string>{"error"});
  CHECK(bus::explain(config, bus::message_deserialization_error("bad json")).reason
        == "a message that cannot be deserialized always goes to the error queue");
}

TEST_CASE("explain runs the custom policy and the safety fallback") {
  bus::recoverability_options options;
  options.available.delayed_delivery = false;
  options.custom = [](const bus::recoverability_config& config, const bus::error_context& context,
                      bus::random_source rng) -> bus::action {
    if (context.immediate_attempts == 2)
      return bus::delayed_retry{1min};
    return bus::default_policy(config, context, rng);
  };
  const auto config = config_of(
      bus::scope_level::bus, [](bus::policy_builder& p) { p.on_any().retry(); },
      std::move(options));
  const auto e = bus::explain(config, validation_error{});
  CHECK(plan_of(e) == std::vector<std::string>{"retry 200ms", "error"});
  CHECK(e.reason.find("a custom policy decides") != std::string::npos);
}

TEST_CASE("explain's plan stops where the retry time limit stops the real schedule") {
  const auto e = bus::explain(config_of([](bus::policy_builder& p) {
                                p.on_any().redeliver(100, 1h, bus::backoff::constant);
                              }),
                              validation_error{});
  REQUIRE(e.plan.size() == 25);
  CHECK(e.plan[23].elapsed == 23h);
  CHECK(e.plan.back().elapsed == 24h);
  CHECK(plan_of(e).back() == "error");
}

TEST_CASE("explain stops a plan that never ends") {
  bus::recoverability_options options;
  options.custom = [](const bus::recoverability_config&, const bus::error_context&,
                      bus::random_source) { return bus::action{bus::immediate_retry{0ms}}; };
  const auto config = config_of(
      bus::scope_level::bus, [](bus::policy_builder& p) { p.on_any().retry(); },
      std::move(options));
  const auto e = bus::explain(config, validation_error{});
  CHECK(e.truncated);
  CHECK(e.plan.size() == static_cast<std::size_t>(bus::explain_plan_limit));
}

TEST_CASE("explain prints a report for people") {
  const auto e = bus::explain(
      config_of([](bus::policy_builder& p) { p.on_any().retry(1, 250ms).then_redeliver({2min}); }),
      validation_error{});
  CHECK(
      bus::to_string(e)
      == "scope: bus\n"
         "exception: bus::test::validation_error\n"
         "rule: on_any().retry(1, 250ms).then_redeliver({2min})\n"
         "why: rule #1 on_any() of the bus scope matches as the catch-all\n"
         "  considered rule #1 on_any(): rank 0, matched\n"
         "attempt 1 (delivery 0, try 1) fails at 00:00:00 -> immediate retry after 00:00:00.250\n"
         "attempt 2 (delivery 0, try 2) fails at 00:00:00.250 -> delayed retry after 00:02:00\n"
         "attempt 3 (delivery 1, try 1) fails at 00:02:00.250 -> immediate retry after "
         "00:00:00.250\n"
         "attempt 4 (delivery 1, try 2) fails at 00:02:00.500 -> move to the error queue: rule #1 "
         "on_any(): retries exhausted after 4 attempts (1 immediate retry, 1 redelivery)\n");
}
