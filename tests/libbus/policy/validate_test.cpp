#include "bus/policy/validate.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;

using namespace bus::test;

TEST_CASE("a configuration that makes no sense is refused with an error that names the rule") {
  struct row {
    configure_fn configure;
    std::string message;
  };
  const std::vector<row> table = {
      {[](bus::policy_builder& p) { p.on_any().retry(-1); },
       "rule #1 on_any(): retry count is -1; it must be 0 or more"},
      {[](bus::policy_builder& p) { p.on_any().redeliver(-2, 1min); },
       "rule #1 on_any(): redelivery count is -2; it must be 0 or more"},
      {[](bus::policy_builder& p) { p.on_any().retry(std::vector<bus::duration>{}); },
       "rule #1 on_any(): retry interval list is empty; give at least one interval"},
      {[](bus::policy_builder& p) {
         p.on_any().retry(2).then_redeliver(std::vector<bus::duration>{});
       },
       "rule #1 on_any(): redelivery interval list is empty; give at least one interval"},
      {[](bus::policy_builder& p) { p.on_any().retry(3, 200ms).max_delay(100ms); },
       "rule #1 on_any(): retry max delay 100ms is below its base delay 200ms; raise it with "
       ".max_delay(200ms) or more on the retry stage"},
      {[](bus::policy_builder& p) {
         p.on_any().redeliver({5min, 2h});
       },
       "rule #1 on_any(): redelivery max delay 1h (the default) is below interval #2 (2h); raise "
       "it with .max_delay(2h) or more on the redelivery stage"},
      {[](bus::policy_builder& p) { p.on_any().retry(3, -5ms); },
       "rule #1 on_any(): retry base delay is -5ms; it must not be negative"},
      {[](bus::policy_builder& p) {
         p.on_any().retry({100ms, -1ms});
       },
       "rule #1 on_any(): retry interval #2 is -1ms; it must not be negative"},
      {[](bus::policy_builder& p) { p.on_any().retry(0, 0ms).max_delay(-1s); },
       "rule #1 on_any(): retry max delay is -1s; it must not be negative"},
      {[](bus::policy_builder& p) { p.on<http_error>().max_attempts(0).retry(); },
       "rule #1 on<bus::test::http_error>(): max_attempts is 0; it must be 1 or more"},
      {[](bus::policy_builder& p) { p.on_any().max_time(0s).redeliver(); },
       "rule #1 on_any(): max_time is 0ms; it must be positive"},
      {[](bus::policy_builder& p) {
         (void)p.on<http_error>([](const http_error&) { return true; });
       },
       "rule #1 on<bus::test::http_error>(predicate): no action; end the chain with retry, "
       "redeliver, dead_letter or discard"},
      {[](bus::policy_builder& p) {
         p.on_any().retry(2, std::function<bus::duration(const std::exception_ptr&, int)>{});
       },
       "rule #1 on_any(): retry delay function is empty"},
  };
  for (const auto& r : table) {
    const auto checked = bus::validate(rules_of(r.configure));
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code == bus::errc::invalid_configuration);
    CHECK(checked.error().message == r.message);
  }
}

TEST_CASE("a max delay below the base delay says that it is the default and how to raise it") {
  // Issue 16: "redelivery max delay 1h is below its base delay 10h" did not
  // say where the 1 h came from.
  struct row {
    configure_fn configure;
    std::string message;
  };
  const std::vector<row> table = {
      {[](bus::policy_builder& p) { p.on_any().redeliver(3, 10h); },
       "rule #1 on_any(): redelivery max delay 1h (the default) is below its base delay 10h; "
       "raise it with .max_delay(10h) or more on the redelivery stage"},
      {[](bus::policy_builder& p) { p.on_any().retry(2).then_redeliver(2, 2h); },
       "rule #1 on_any(): redelivery max delay 1h (the default) is below its base delay 2h; "
       "raise it with .max_delay(2h) or more on the redelivery stage"},
      {[](bus::policy_builder& p) { p.on_any().retry(2, 1min); },
       "rule #1 on_any(): retry max delay 30s (the default) is below its base delay 1min; raise "
       "it with .max_delay(1min) or more on the retry stage"},
      {[](bus::policy_builder& p) { p.on_any().redeliver(3, 10h).max_delay(2h); },
       "rule #1 on_any(): redelivery max delay 2h is below its base delay 10h; raise it with "
       ".max_delay(10h) or more on the redelivery stage"},
      {[](bus::policy_builder& p) { p.on_any().redeliver({5min, 3h, 2h}); },
       "rule #1 on_any(): redelivery max delay 1h (the default) is below interval #2 (3h); raise "
       "it with .max_delay(3h) or more on the redelivery stage"},
  };
  for (const auto& r : table) {
    const auto checked = bus::validate(rules_of(r.configure));
    REQUIRE_FALSE(checked);
    CHECK(checked.error().message == r.message);
  }
}

TEST_CASE("a rule that asks for a delay beyond the longest the bus schedules is refused, naming "
          "the rule and the limit") {
  using days = std::chrono::duration<long long, std::ratio<86400>>;
  const bus::duration two_years = days(730);
  const bus::duration a_year = days(365);
  REQUIRE(bus::max_scheduled_delay == a_year);
  struct row {
    configure_fn configure;
    std::string message;
  };
  const std::vector<row> table = {
      {[=](bus::policy_builder& p) { p.on_any().redeliver(3, two_years).max_delay(two_years); },
       "rule #1 on_any(): redelivery base delay 17520h is above the longest delay the bus "
       "schedules, 8760h (365 days); rule #1 on_any(): redelivery max delay 17520h is above the "
       "longest delay the bus schedules, 8760h (365 days)"},
      {[=](bus::policy_builder& p) {
         p.on<http_error>().redeliver({1h, two_years}).max_delay(two_years);
       },
       "rule #1 on<bus::test::http_error>(): redelivery interval #2 (17520h) is above the longest "
       "delay the bus schedules, 8760h (365 days); rule #1 on<bus::test::http_error>(): "
       "redelivery max delay 17520h is above the longest delay the bus schedules, 8760h (365 "
       "days)"},
      {[=](bus::policy_builder& p) { p.on_any().retry(1, 1s).max_delay(two_years); },
       "rule #1 on_any(): retry max delay 17520h is above the longest delay the bus schedules, "
       "8760h (365 days)"},
      {[=](bus::policy_builder& p) { p.on_any().redeliver(2, 10h); },
       "rule #1 on_any(): redelivery max delay 1h (the default) is below its base delay 10h; "
       "raise it with .max_delay(10h) or more on the redelivery stage"},
  };
  for (const auto& r : table) {
    const auto checked = bus::validate(rules_of(r.configure));
    REQUIRE_FALSE(checked);
    CHECK(checked.error().message == r.message);
  }
  // The limit itself is allowed.
  CHECK(bus::validate(rules_of([=](bus::policy_builder& p) {
    p.on_any().redeliver({a_year}).max_delay(a_year);
  })));
}

TEST_CASE("no max delay beyond the longest delay the bus schedules is suggested") {
  using days = std::chrono::duration<long long, std::ratio<86400>>;
  const bus::duration two_years = days(730);
  const auto checked =
      bus::validate(rules_of([=](bus::policy_builder& p) { p.on_any().redeliver(1, two_years); }));
  REQUIRE_FALSE(checked);
  CHECK(checked.error().message
        == "rule #1 on_any(): redelivery base delay 17520h is above the longest delay the bus "
           "schedules, 8760h (365 days); rule #1 on_any(): redelivery max delay 1h (the default) "
           "is below its base delay 17520h");
}

TEST_CASE("every mistake is reported at once, each naming its scope and rule") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::bus, [](bus::policy_builder& p) {
    p.on<http_error>().retry(-1).then_redeliver(std::vector<bus::duration>{});
    p.on_any().retry();
  });
  scopes.add_resilience(bus::scope_level::consumer,
                        [](bus::policy_builder& p) { p.on_any().retry(3, 1s).max_delay(500ms); });
  const auto config = bus::make_recoverability_config(scopes);
  REQUIRE_FALSE(config);
  CHECK(config.error().code == bus::errc::invalid_configuration);
  CHECK(config.error().message
        == "bus scope, rule #1 on<bus::test::http_error>(): retry count is -1; it must be 0 or "
           "more; bus scope, rule #1 on<bus::test::http_error>(): redelivery interval list is "
           "empty; give at least one interval; consumer scope, rule #1 on_any(): retry max delay "
           "500ms is below its base delay 1s; raise it with .max_delay(1s) or more on the retry "
           "stage");
}

TEST_CASE("a scope that loses resolution is validated too") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::host,
                        [](bus::policy_builder& p) { p.on_any().retry(-3); });
  scopes.add_resilience(bus::scope_level::consumer);
  REQUIRE_FALSE(bus::validate(scopes));
  CHECK(bus::validate(scopes).error().message
        == "host scope, rule #1 on_any(): retry count is -3; it must be 0 or more");
}

TEST_CASE("the endpoint-wide retry time limit must be positive") {
  bus::recoverability_options options;
  options.max_retry_time = 0ms;
  const auto config =
      bus::make_recoverability_config(bus::recoverability_scopes{}, std::move(options));
  REQUIRE_FALSE(config);
  CHECK(config.error().message == "max_retry_time is 0ms; it must be positive");
}

TEST_CASE("sensible configurations pass validation") {
  const std::vector<configure_fn> table = {
      [](bus::policy_builder& p) { p.on_any().retry().then_redeliver().then_dead_letter(); },
      [](bus::policy_builder& p) { p.on_any().retry(0); },
      [](bus::policy_builder& p) { p.on_any().retry(5, 0ms, bus::backoff::constant); },
      [](bus::policy_builder& p) {
        p.on_any().redeliver({30s, 5min, 30min}).max_delay(30min);
      },
      [](bus::policy_builder& p) { p.on<http_error>().max_attempts(1).max_time(1ms).discard(); },
      [](bus::policy_builder&) {},
  };
  for (const auto& configure : table)
    CHECK(bus::validate(rules_of(configure)));
}

TEST_CASE("the longest retry time of a configuration is its max retry time or a rule's longer "
          "max_time") {
  struct row {
    const char* what;
    configure_fn configure;
    bus::duration max_retry_time;
    bus::duration longest;
  };
  std::vector<row> rows{
    {"the default", [](auto& p) { p.on_any().retry(3); }, bus::default_max_retry_time,
     bus::default_max_retry_time},
    {"a shorter bus limit", [](auto& p) { p.on_any().retry(3); }, 1h, 1h},
    {"a rule's longer max_time",
     [](bus::policy_builder& p) {
       p.on<std::runtime_error>().max_time(48h).retry(3);
       p.on_any().retry(3);
     },
     2h, 48h},
    {"a rule's shorter max_time leaves the bus's", [](auto& p) { p.on_any().max_time(1min).retry(3); },
     2h, 2h},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    bus::recoverability_options options;
    options.max_retry_time = r.max_retry_time;
    CHECK(bus::longest_retry_time(config_of(r.configure, options)) == r.longest);
  }
}

TEST_CASE("a stream endpoint refuses every rule that retries or redelivers, naming each") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::bus, [](bus::policy_builder& p) {
    p.on<http_error>().retry(3);
    p.on<std::invalid_argument>().discard();
    p.on_any().retry(2).then_redeliver();
  });
  const auto checked = bus::validate_for_stream(scopes.resolve());
  REQUIRE_FALSE(checked);
  CHECK(checked.error().code == bus::errc::invalid_configuration);
  const std::string advice =
      ", which a message read from a stream may not (every reader would read it again); end the "
      "rule with dead_letter() or discard(), in a scope of the stream endpoint's own if the rule "
      "is shared";
  CHECK(checked.error().message
        == "bus scope, rule #1 on<bus::test::http_error>(): retries" + advice
             + "; bus scope, rule #3 on_any(): retries and redelivers" + advice);

  scopes.add_resilience(bus::scope_level::endpoint,
                        [](bus::policy_builder& p) { p.on_any().redeliver({1min}); });
  const auto endpoint_scope = bus::validate_for_stream(scopes.resolve());
  REQUIRE_FALSE(endpoint_scope);
  CHECK(endpoint_scope.error().message == "endpoint scope, rule #1 on_any(): redelivers" + advice);
}

TEST_CASE("a stream endpoint takes rules that dead-letter, discard or trip a dependency") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::bus,
                        [](bus::policy_builder& p) { p.on_any().retry(5).then_redeliver(); });
  // The endpoint's own scope replaces the shared one as a whole.
  scopes.add_resilience(bus::scope_level::endpoint, [](bus::policy_builder& p) {
    p.on<http_error>().discard();
    p.on<std::runtime_error>().trips("inventory-db").dead_letter();
    p.on_any().dead_letter();
  });
  CHECK(bus::validate_for_stream(scopes.resolve()));
  CHECK(bus::validate_for_stream(bus::recoverability_scopes{}.resolve())); // no rules: error queue
}
