#include "bus/policy/json.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;

using namespace bus::test;

namespace {

bus::recoverability_config sample_config() {
  bus::recoverability_options options;
  options.error_queue = "orders_error";
  options.available.delayed_delivery = false;
  options.unrecoverable.add<validation_error>();
  return config_of(
      bus::scope_level::endpoint,
      [](bus::policy_builder& p) {
        p.on<validation_error>().dead_letter();
        p.on_any().max_attempts(10).retry(3, 500ms, bus::backoff::linear).then_redeliver();
      },
      std::move(options));
}

} // namespace

TEST_CASE("a configuration describes itself as JSON for the start-up log") {
  const nlohmann::json j = sample_config();
  CHECK(j["scope"] == "endpoint");
  CHECK(j["error_queue"] == "orders_error");
  CHECK(j["max_retry_time_ms"] == 86'400'000);
  CHECK(j["capabilities"]
        == nlohmann::json{{"immediate_retries", true}, {"delayed_delivery", false}});
  CHECK(j["unrecoverable"]
        == nlohmann::json::array(
            {"bus::message_deserialization_error", "bus::test::validation_error"}));
  CHECK(j["custom_policy"] == false);
  REQUIRE(j["rules"].size() == 2);
  CHECK(j["rules"][0]
        == nlohmann::json{{"rule", "on<bus::test::validation_error>().dead_letter()"},
                          {"exception", "bus::test::validation_error"},
                          {"predicate", false},
                          {"retry", nullptr},
                          {"redelivery", nullptr},
                          {"terminal", "dead_letter"},
                          {"max_attempts", nullptr},
                          {"max_time_ms", nullptr}});
  const auto& catch_all = j["rules"][1];
  CHECK(catch_all["exception"] == "*");
  CHECK(catch_all["terminal"] == "error_queue");
  CHECK(catch_all["max_attempts"] == 10);
  CHECK(catch_all["retry"]
        == nlohmann::json{{"count", 3},
                          {"delays", "linear"},
                          {"base_delay_ms", 500},
                          {"jitter", true},
                          {"max_delay_ms", 30'000}});
  CHECK(catch_all["redelivery"]
        == nlohmann::json{{"count", 3},
                          {"delays", "intervals"},
                          {"intervals_ms", {300'000, 900'000, 1'800'000}},
                          {"jitter", true},
                          {"max_delay_ms", 3'600'000}});
}

TEST_CASE("actions describe themselves as JSON") {
  CHECK(nlohmann::json(bus::action{bus::immediate_retry{200ms}})
        == nlohmann::json{{"action", "immediate_retry"}, {"delay_ms", 200}});
  CHECK(nlohmann::json(bus::action{bus::delayed_retry{5min}})
        == nlohmann::json{{"action", "delayed_retry"}, {"delay_ms", 300'000}});
  CHECK(nlohmann::json(bus::action{bus::move_to_error{"exhausted", "q_error"}})
        == nlohmann::json{
            {"action", "move_to_error"}, {"reason", "exhausted"}, {"queue", "q_error"}});
  CHECK(nlohmann::json(bus::action{bus::discard{"duplicate"}})
        == nlohmann::json{{"action", "discard"}, {"reason", "duplicate"}});
}

TEST_CASE("an explanation describes itself as JSON") {
  const nlohmann::json j = bus::explain(sample_config(), std::runtime_error("boom"));
  CHECK(j["scope"] == "endpoint");
  CHECK(j["exception_type"] == "std::runtime_error");
  CHECK(j["rule"] == 1);
  CHECK(j["candidates"][0]["verdict"] == "matched");
  CHECK(j["plan"][0]
        == nlohmann::json{{"attempt", 1},
                          {"delivery", 0},
                          {"immediate_attempt", 1},
                          {"elapsed_ms", 0},
                          {"then", {{"action", "immediate_retry"}, {"delay_ms", 500}}}});
  CHECK(j["plan"].size() == 4); // no delayed delivery here: 3 retries, then the error queue
  CHECK(j["truncated"] == false);
}
