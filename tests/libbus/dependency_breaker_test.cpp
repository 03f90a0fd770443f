// The dependency breaker's state machine on made-up time points: both
// triggers, the wait, the single probe, and what happens to outcomes that
// arrive in each state.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/dependency_breaker.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/explain.hpp"
#include "bus/policy/json.hpp"
#include "bus/policy/resilience.hpp"

using namespace std::chrono_literals;
using bus::breaker_state;
using breaker_transition = bus::dependency_breaker::transition;

namespace {

const bus::time_point breaker_t0 = bus::time_point{} + 1000h;

bus::dependency_breaker_settings consecutive_only(int n) {
  bus::dependency_breaker_settings s;
  s.consecutive_failures = n;
  s.failure_rate = 0;
  s.open_wait = 5s;
  return s;
}

bus::dependency_breaker_settings rate_only(double rate, int minimum) {
  bus::dependency_breaker_settings s;
  s.consecutive_failures = 0;
  s.failure_rate = rate;
  s.minimum_calls = minimum;
  s.window = 10s;
  s.open_wait = 5s;
  return s;
}

} // namespace

TEST_CASE("the breaker opens at the threshold of consecutive failures, once") {
  bus::dependency_breaker b(consecutive_only(3));
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  CHECK(b.state(breaker_t0) == breaker_state::closed);
  CHECK(b.record_failure(breaker_t0 + 1ms, false) == breaker_transition::opened);
  CHECK(b.state(breaker_t0 + 1ms) == breaker_state::open);
  CHECK_FALSE(b.closed());
  CHECK(b.open_until() == breaker_t0 + 1ms + 5s);
  // A call in flight when it opened changes nothing.
  CHECK(b.record_failure(breaker_t0 + 2ms, false) == breaker_transition::none);
  CHECK(b.record_success(breaker_t0 + 2ms, false) == breaker_transition::none);
  CHECK(b.times_opened() == 1);
}

TEST_CASE("a success ends the streak of consecutive failures") {
  bus::dependency_breaker b(consecutive_only(2));
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  CHECK(b.record_success(breaker_t0, false) == breaker_transition::none);
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  CHECK(b.consecutive() == 1);
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::opened);
}

TEST_CASE("the failure rate opens the breaker only with the minimum of calls in the window") {
  bus::dependency_breaker b(rate_only(0.5, 10));
  // 4 failures out of 8: 50%, but fewer than 10 calls.
  for (int i = 0; i < 4; ++i) {
    CHECK(b.record_success(breaker_t0, false) == breaker_transition::none);
    CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  }
  CHECK(b.record_success(breaker_t0, false) == breaker_transition::none);   // 4 of 9
  CHECK(b.record_failure(breaker_t0, false) == breaker_transition::opened); // 5 of 10
}

TEST_CASE("a failure rate under the threshold never opens the breaker") {
  bus::dependency_breaker b(rate_only(0.5, 10));
  for (int i = 0; i < 1000; ++i) {
    auto now = breaker_t0 + i * 10ms;
    CHECK(b.record_success(now, false) == breaker_transition::none);
    CHECK(b.record_success(now, false) == breaker_transition::none);
    CHECK(b.record_failure(now, false) == breaker_transition::none); // 33%
  }
  CHECK(b.state(breaker_t0 + 10s) == breaker_state::closed);
}

TEST_CASE("outcomes older than the window no longer count towards the rate") {
  bus::dependency_breaker b(rate_only(0.5, 10));
  for (int i = 0; i < 9; ++i)
    CHECK(b.record_failure(breaker_t0, false)
          == breaker_transition::none); // 9 of 9, under the minimum
  CHECK(b.calls(breaker_t0 + 9s) == 9);
  CHECK(b.calls(breaker_t0 + 10s) == 0);
  // Eleven seconds later the old failures have left the window.
  CHECK(b.record_failure(breaker_t0 + 11s, false) == breaker_transition::none);
  CHECK(b.failures(breaker_t0 + 11s) == 1);
}

TEST_CASE("after the wait one probe goes through, and its success closes the breaker") {
  bus::dependency_breaker b(consecutive_only(1));
  REQUIRE(b.record_failure(breaker_t0, false) == breaker_transition::opened);
  CHECK_FALSE(b.try_probe(breaker_t0 + 4999ms));
  CHECK(b.state(breaker_t0 + 5s) == breaker_state::half_open);
  CHECK(b.try_probe(breaker_t0 + 5s));
  CHECK_FALSE(b.try_probe(breaker_t0 + 5s)); // one probe at a time
  CHECK(b.probe_out());
  // Successes other than the probe's do not close it.
  CHECK(b.record_success(breaker_t0 + 5s, false) == breaker_transition::none);
  CHECK(b.record_success(breaker_t0 + 6s, true) == breaker_transition::closed);
  CHECK(b.closed());
  CHECK(b.consecutive() == 0);
  CHECK(b.calls(breaker_t0 + 6s) == 0); // the outage's outcomes are forgotten
}

TEST_CASE("the probe's failure opens the breaker again for another wait") {
  bus::dependency_breaker b(consecutive_only(1));
  REQUIRE(b.record_failure(breaker_t0, false) == breaker_transition::opened);
  CHECK(b.advance(breaker_t0 + 5s) == breaker_transition::half_opened);
  CHECK(b.advance(breaker_t0 + 5s) == breaker_transition::none);
  REQUIRE(b.try_probe(breaker_t0 + 5s));
  CHECK(b.record_failure(breaker_t0 + 5s, false) == breaker_transition::none); // not the probe
  CHECK(b.record_failure(breaker_t0 + 6s, true) == breaker_transition::opened);
  CHECK(b.open_until() == breaker_t0 + 11s);
  CHECK_FALSE(b.try_probe(breaker_t0 + 10s));
  CHECK(b.try_probe(breaker_t0 + 11s));
  CHECK(b.times_opened() == 2);
}

TEST_CASE("a probe released without a verdict lets another probe through") {
  bus::dependency_breaker b(consecutive_only(1));
  REQUIRE(b.record_failure(breaker_t0, false) == breaker_transition::opened);
  REQUIRE(b.try_probe(breaker_t0 + 5s));
  b.release_probe();
  CHECK(b.state(breaker_t0 + 5s) == breaker_state::half_open);
  CHECK(b.try_probe(breaker_t0 + 5s));
}

TEST_CASE("with both triggers off the breaker never opens") {
  bus::dependency_breaker_settings s;
  s.consecutive_failures = 0;
  s.failure_rate = 0;
  bus::dependency_breaker b(s);
  for (int i = 0; i < 100; ++i)
    CHECK(b.record_failure(breaker_t0, false) == breaker_transition::none);
  CHECK(b.closed());
}

TEST_CASE("explain and describe show a rule's dependency clause") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::endpoint, [](bus::policy_builder& p) {
    p.on<std::runtime_error>().trips("inventory-db").retry(2).then_dead_letter();
    p.on<std::logic_error>().trips("inventory-db").trips("pricing-api");
  });
  auto config = bus::make_recoverability_config(scopes);
  REQUIRE(config);
  auto chained = bus::explain(*config, std::runtime_error("down"));
  CHECK(chained.rule_text == "on<std::runtime_error>().trips(\"inventory-db\").retry(2).then_dead_letter()");
  CHECK(chained.trips == std::vector<std::string>{"inventory-db"});
  CHECK_THAT(bus::to_string(chained),
             Catch::Contains("dependencies: each failure counts against dependency 'inventory-db'; "
                             "once its breaker is open"));
  auto only = bus::explain(*config, std::logic_error("down"));
  CHECK(only.trips == std::vector<std::string>{"inventory-db", "pricing-api"});
  CHECK_THAT(only.dependency_clause, Catch::Contains("every failure goes back to its queue unharmed"));
  nlohmann::json j = config->rules.rules()[1];
  CHECK(j["trips"] == nlohmann::json::array({"inventory-db", "pricing-api"}));
  CHECK_FALSE(nlohmann::json(bus::rule{}).contains("trips"));
}
