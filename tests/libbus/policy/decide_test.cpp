#include "bus/policy/decide.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;

namespace decide_test {

// The custom policy's own exception, which the rules know nothing of.
struct my_business_error : std::runtime_error {
  my_business_error() : std::runtime_error("business rule violated") {}
};

} // namespace decide_test

using namespace decide_test;
using namespace bus::test;

namespace {

// The middle of every jitter range: jittered delays equal nominal delays.
fixed_draw nominal() {
  return fixed_draw{bus::test::middle};
}

bus::error_context first_failure(std::exception_ptr exception) {
  bus::error_context context;
  context.exception = std::move(exception);
  context.first_failure = t0;
  context.now = t0;
  return context;
}

struct run {
  std::vector<std::string> steps; // summary of each decision
  bus::action last = bus::move_to_error{};
};

// Does what the consumer actor does for a handler that always fails: asks
// decide() after each failure and follows the action, raising the counters
// and advancing the time by each delay, until a terminal action. The
// runtime tracks total attempts unless `track_total` is false, in which
// case decide() derives them.
run always_failing(const bus::recoverability_config& config, std::exception_ptr exception,
                   bus::random_source rng, bool track_total = true) {
  run out;
  auto context = first_failure(std::move(exception));
  for (int attempt = 1; attempt <= 200; ++attempt) {
    if (track_total)
      context.total_attempts = attempt;
    out.last = bus::decide(config, context, rng);
    out.steps.push_back(summary(out.last));
    if (const auto* retry = std::get_if<bus::immediate_retry>(&out.last)) {
      ++context.immediate_attempts;
      context.now += retry->delay;
    } else if (const auto* redelivery = std::get_if<bus::delayed_retry>(&out.last)) {
      ++context.delivery_count;
      context.immediate_attempts = 1;
      context.now += redelivery->delay;
    } else {
      break;
    }
  }
  return out;
}

std::string reason_of(const bus::action& a) {
  if (const auto* m = std::get_if<bus::move_to_error>(&a))
    return m->reason;
  if (const auto* d = std::get_if<bus::discard>(&a))
    return d->reason;
  return "(not terminal: " + bus::describe(a) + ")";
}

} // namespace

TEST_CASE("Mocha's chain table: the actions and delays of a handler that always fails") {
  const std::vector<std::string> retries = {"retry 200ms", "retry 400ms", "retry 800ms"};
  const auto retry_then_redeliver = [&] {
    std::vector<std::string> out;
    for (const char* redelivery : {"redeliver 5min", "redeliver 15min", "redeliver 30min"}) {
      out.insert(out.end(), retries.begin(), retries.end());
      out.push_back(redelivery);
    }
    out.insert(out.end(), retries.begin(), retries.end());
    out.push_back("error");
    return out;
  }();
  struct row {
    const char* chain;
    configure_fn configure;
    std::vector<std::string> steps;
  };
  const std::vector<row> table = {
      {".discard()", [](bus::policy_builder& p) { p.on_any().discard(); }, {"discard"}},
      {".dead_letter()", [](bus::policy_builder& p) { p.on_any().dead_letter(); }, {"error"}},
      {".retry()",
       [](bus::policy_builder& p) { p.on_any().retry(); },
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {".retry(3)",
       [](bus::policy_builder& p) { p.on_any().retry(3); },
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {".redeliver()",
       [](bus::policy_builder& p) { p.on_any().redeliver(); },
       {"redeliver 5min", "redeliver 15min", "redeliver 30min", "error"}},
      {".retry(3).then_redeliver()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); }, retry_then_redeliver},
      {".retry(3).then_dead_letter()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_dead_letter(); },
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"}},
      {".retry(3).then_redeliver().then_dead_letter()",
       [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver().then_dead_letter(); },
       retry_then_redeliver},
  };
  for (const auto& r : table) {
    INFO(r.chain);
    auto generator = nominal();
    CHECK(
        always_failing(config_of(r.configure), std::make_exception_ptr(http_error{503}), generator)
            .steps
        == r.steps);
  }
}

TEST_CASE(
    "NServiceBus's arithmetic: n immediate and m delayed retries make (n + 1)(m + 1) attempts") {
  struct row {
    int immediate;
    int delayed;
    std::size_t attempts;
  };
  const std::vector<row> table = {{5, 3, 24}, {0, 0, 1},  {3, 0, 4},
                                  {0, 2, 3},  {3, 2, 12}, {1, 1, 4}};
  for (const auto& r : table) {
    CAPTURE(r.immediate, r.delayed);
    const auto config = config_of([&](bus::policy_builder& p) {
      p.on_any().retry(r.immediate, 0ms).then_redeliver(r.delayed, 10s, bus::backoff::linear);
    });
    auto generator = nominal();
    const auto result = always_failing(config, std::make_exception_ptr(http_error{500}), generator);
    CHECK(result.steps.size() == r.attempts);
    CHECK(result.steps.back() == "error");
  }
}

TEST_CASE("NServiceBus's retry log: 3 immediate and 2 delayed retries of 10 s increments") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on_any().retry(3, 0ms).then_redeliver(2, 10s, bus::backoff::linear).jitter(false);
  });
  auto generator = nominal();
  const auto result = always_failing(config, std::make_exception_ptr(http_error{500}), generator);
  // Attempts 1-3 retry at once, 4 reschedules after 10 s, 5-7 retry, 8
  // reschedules after 20 s, 9-11 retry, 12 moves to the error queue.
  CHECK(result.steps
        == std::vector<std::string>{"retry 0ms", "retry 0ms", "retry 0ms", "redeliver 10s",
                                    "retry 0ms", "retry 0ms", "retry 0ms", "redeliver 20s",
                                    "retry 0ms", "retry 0ms", "retry 0ms", "error"});
  CHECK(reason_of(result.last)
        == "rule #1 on_any(): retries exhausted after 12 attempts (3 immediate retries, 2 "
           "redeliveries)");
}

TEST_CASE("an immediate retry is chosen while immediate attempts do not exceed the retries") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on_any().retry(2, 100ms, bus::backoff::linear).jitter(false).then_redeliver({1min});
  });
  struct row {
    int immediate_attempts;
    std::uint32_t delivery_count;
    std::string decision;
  };
  const std::vector<row> table = {
      {1, 0, "retry 100ms"}, {2, 0, "retry 200ms"}, {3, 0, "redeliver 1min"},
      {1, 1, "retry 100ms"}, {3, 1, "error"},
  };
  for (const auto& r : table) {
    CAPTURE(r.immediate_attempts, r.delivery_count);
    auto context = first_failure(std::make_exception_ptr(http_error{500}));
    context.immediate_attempts = r.immediate_attempts;
    context.delivery_count = r.delivery_count;
    auto generator = nominal();
    CHECK(summary(bus::decide(config, context, generator)) == r.decision);
  }
}

TEST_CASE("jittered delays stay within 20 percent of the schedule and under its cap") {
  const auto config =
      config_of([](bus::policy_builder& p) { p.on_any().retry(3, 10s).then_redeliver({50min}); });
  struct row {
    int immediate_attempts;
    std::uint32_t delivery_count;
    std::uint64_t draw;
    std::string decision;
  };
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  const std::vector<row> table = {
      {1, 0, 0, "retry 8s"},
      {1, 0, top, "retry 12s"},
      {2, 0, 0, "retry 16s"},
      {2, 0, top, "retry 24s"},
      {3, 0, 0, "retry 24s"},
      {3, 0, top, "retry 30s"}, // 40 s capped at 30 s, then jittered and capped
      {4, 0, 0, "redeliver 40min"},
      {4, 0, top, "redeliver 1h"}, // 60 min: exactly the cap
  };
  for (const auto& r : table) {
    CAPTURE(r.immediate_attempts, r.draw);
    auto context = first_failure(std::make_exception_ptr(http_error{500}));
    context.immediate_attempts = r.immediate_attempts;
    context.delivery_count = r.delivery_count;
    fixed_draw generator{r.draw};
    CHECK(summary(bus::decide(config, context, generator)) == r.decision);
  }
}

TEST_CASE("the same generator state gives the same decisions") {
  const auto config =
      config_of([](bus::policy_builder& p) { p.on_any().retry(5).then_redeliver(); });
  std::mt19937_64 first(2026);
  std::mt19937_64 second(2026);
  const auto exception = std::make_exception_ptr(http_error{500});
  CHECK(always_failing(config, exception, first).steps
        == always_failing(config, exception, second).steps);
}

TEST_CASE("a delay taken from the exception: an HTTP 429 with Retry-After") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<http_error>([](const http_error& e) { return e.status == 429; })
        .retry(2, [](const http_error& e, int) { return e.retry_after; })
        .then_redeliver(
            2, [](const http_error& e, int attempt) { return e.retry_after * 10 * attempt; });
    p.on_any().dead_letter();
  });
  fixed_draw top{
      std::numeric_limits<std::uint64_t>::max()}; // no jitter: the value is used as given
  CHECK(always_failing(config, std::make_exception_ptr(http_error{429, 7s}), top).steps
        == std::vector<std::string>{"retry 7s", "retry 7s", "redeliver 70s", "retry 7s", "retry 7s",
                                    "redeliver 140s", "retry 7s", "retry 7s", "error"});
  CHECK(always_failing(config, std::make_exception_ptr(http_error{429, 45s}), top).steps.front()
        == "retry 30s"); // the retry tier's cap still holds
  CHECK(always_failing(config, std::make_exception_ptr(http_error{503}), top).steps
        == std::vector<std::string>{"error"});
}

TEST_CASE("a delay function that throws sends the message to the error queue with the reason") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<http_error>().retry(2, [](const http_error&, int) -> std::chrono::seconds {
      throw std::runtime_error("no Retry-After header");
    });
  });
  auto generator = nominal();
  const auto decided =
      bus::decide(config, first_failure(std::make_exception_ptr(http_error{429})), generator);
  CHECK(
      reason_of(decided)
      == "rule #1 on<bus::test::http_error>(): its delay function threw: no Retry-After header");
}

TEST_CASE("a total attempt budget cuts a retry-then-redeliver chain short at the 10th attempt") {
  const auto config = config_of(
      [](bus::policy_builder& p) { p.on_any().max_attempts(10).retry(3).then_redeliver(); });
  const std::vector<std::string> expected = {
      "retry 200ms", "retry 400ms", "retry 800ms", "redeliver 5min",  // attempts 1-4
      "retry 200ms", "retry 400ms", "retry 800ms", "redeliver 15min", // attempts 5-8
      "retry 200ms", "error"};                                        // attempts 9-10
  for (const bool runtime_tracks_total : {true, false}) {
    CAPTURE(runtime_tracks_total);
    auto generator = nominal();
    const auto result = always_failing(config, std::make_exception_ptr(http_error{500}), generator,
                                       runtime_tracks_total);
    CHECK(result.steps == expected);
    CHECK(reason_of(result.last) == "rule #1 on_any(): attempt budget of 10 attempts spent");
  }
}

TEST_CASE("retrying stops 24 hours after the first failure unless the rule sets its own limit") {
  // A redelivery that would fire after the limit is not scheduled (issue
  // 14): the chain ends when the last redelivery in time has failed.
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<http_error>().max_time(2h).redeliver(10, 1h, bus::backoff::constant);
    p.on_any().redeliver(100, 1h, bus::backoff::constant);
  });
  struct row {
    std::exception_ptr exception;
    bus::duration since_first_failure;
    std::string decision;
  };
  const std::vector<row> table = {
      {std::make_exception_ptr(validation_error{}), 23h, "redeliver 1h"},
      {std::make_exception_ptr(validation_error{}), 23h + 1min, "error"},
      {std::make_exception_ptr(validation_error{}), 24h, "error"},
      {std::make_exception_ptr(http_error{500}), 1h, "redeliver 1h"},
      {std::make_exception_ptr(http_error{500}), 1h + 1min, "error"},
      {std::make_exception_ptr(http_error{500}), 2h, "error"},
  };
  for (const auto& r : table) {
    CAPTURE(r.since_first_failure.count());
    auto context = first_failure(r.exception);
    context.delivery_count = 1;
    context.now = t0 + r.since_first_failure;
    auto generator = nominal();
    CHECK(summary(bus::decide(config, context, generator)) == r.decision);
  }
  auto context = first_failure(std::make_exception_ptr(validation_error{}));
  context.now = t0 + 25h;
  auto generator = nominal();
  CHECK(reason_of(bus::decide(config, context, generator))
        == "rule #2 on_any(): retry time limit of 24:00:00 since the first failure reached");
}

TEST_CASE("the endpoint-wide retry time limit is configurable") {
  bus::recoverability_options options;
  options.max_retry_time = 30min;
  const auto config =
      config_of([](bus::policy_builder& p) { p.on_any().redeliver(); }, std::move(options));
  auto context = first_failure(std::make_exception_ptr(http_error{500}));
  context.delivery_count = 2;
  context.now = t0 + 30min;
  auto generator = nominal();
  CHECK(summary(bus::decide(config, context, generator)) == "error");
}

TEST_CASE("no matching rule sends the message to the configured error queue") {
  bus::recoverability_options options;
  options.error_queue = "orders_failed";
  const auto config =
      config_of([](bus::policy_builder& p) { p.on<http_error>().retry(); }, std::move(options));
  auto generator = nominal();
  CHECK(bus::decide(config, first_failure(std::make_exception_ptr(validation_error{})), generator)
        == bus::action{bus::move_to_error{
            "no exception policy rule matches bus::test::validation_error", "orders_failed"}});
  CHECK(
      bus::decide(config, first_failure(std::make_exception_ptr(42)), generator)
      == bus::action{bus::move_to_error{"no exception policy rule matches int", "orders_failed"}});
}

TEST_CASE("terminal rules say which rule ended the message") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<validation_error>().dead_letter();
    p.on<http_error>().discard();
  });
  auto generator = nominal();
  CHECK(bus::decide(config, first_failure(std::make_exception_ptr(validation_error{})), generator)
        == bus::action{
            bus::move_to_error{"rule #1 on<bus::test::validation_error>() dead-letters it", ""}});
  CHECK(bus::decide(config, first_failure(std::make_exception_ptr(http_error{409})), generator)
        == bus::action{bus::discard{"rule #2 on<bus::test::http_error>() discards it"}});
}

TEST_CASE("the consumer's rules replace the bus's rules in the decision") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(bus::scope_level::bus, [](bus::policy_builder& p) {
    p.on<validation_error>().discard();
    p.on_any().retry();
  });
  scopes.add_resilience(bus::scope_level::consumer, [](bus::policy_builder& p) {
    p.on<http_error>().retry(5, 500ms, bus::backoff::exponential);
  });
  auto config = bus::make_recoverability_config(scopes);
  REQUIRE(config);
  auto generator = nominal();
  CHECK(summary(bus::decide(*config, first_failure(std::make_exception_ptr(http_error{500})),
                            generator))
        == "retry 500ms");
  // The bus's discard rule does not leak into the consumer's policy.
  CHECK(summary(bus::decide(*config, first_failure(std::make_exception_ptr(validation_error{})),
                            generator))
        == "error");
}

TEST_CASE("an unrecoverable exception and its subtypes go to the error queue at once") {
  bus::recoverability_options options;
  options.unrecoverable.add<validation_error>().add<argument_error>();
  const auto config = config_of([](bus::policy_builder& p) { p.on_any().retry().then_redeliver(); },
                                std::move(options));
  auto generator = nominal();
  CHECK(reason_of(bus::decide(config, first_failure(std::make_exception_ptr(argument_null_error{})),
                              generator))
        == "unrecoverable exception bus::test::argument_null_error (declared unrecoverable as "
           "bus::test::argument_error)");
  CHECK(reason_of(bus::decide(config, first_failure(std::make_exception_ptr(validation_error{})),
                              generator))
        == "unrecoverable exception bus::test::validation_error");
  CHECK(summary(
            bus::decide(config, first_failure(std::make_exception_ptr(http_error{500})), generator))
        == "retry 200ms");
}

TEST_CASE(
    "a deserialization failure is unrecoverable whatever the rules and the custom policy say") {
  bus::recoverability_options options;
  options.custom = [](const bus::recoverability_config&, const bus::error_context&,
                      bus::random_source) { return bus::action{bus::delayed_retry{1min}}; };
  const auto config = config_of(
      [](bus::policy_builder& p) {
        p.on<bus::message_deserialization_error>().retry(5);
        p.on_any().retry();
      },
      std::move(options));
  auto generator = nominal();
  const auto decided = bus::decide(
      config,
      first_failure(std::make_exception_ptr(bus::message_deserialization_error("bad json"))),
      generator);
  CHECK(decided
        == bus::action{
            bus::move_to_error{"unrecoverable: the message body could not be deserialized", ""}});
}

TEST_CASE("a custom policy changes the default for one exception type only") {
  bus::recoverability_options options;
  options.custom = [](const bus::recoverability_config& config, const bus::error_context& context,
                      bus::random_source rng) -> bus::action {
    try {
      std::rethrow_exception(context.exception);
    } catch (const my_business_error&) {
      return bus::move_to_error{"business rule violation", "business_errors"};
    } catch (...) {
    }
    return bus::default_policy(config, context, rng);
  };
  const auto config = config_of(
      [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); }, std::move(options));
  auto generator = nominal();
  CHECK(always_failing(config, std::make_exception_ptr(my_business_error{}), generator).steps
        == std::vector<std::string>{"error"});
  CHECK(bus::decide(config, first_failure(std::make_exception_ptr(my_business_error{})), generator)
        == bus::action{bus::move_to_error{"business rule violation", "business_errors"}});
  CHECK(always_failing(config, std::make_exception_ptr(http_error{500}), generator).steps.size()
        == 16);
}

TEST_CASE("a custom policy that throws sends the message to the error queue with the reason") {
  bus::recoverability_options options;
  options.custom = [](const bus::recoverability_config&, const bus::error_context&,
                      bus::random_source) -> bus::action { throw std::runtime_error("oops"); };
  const auto config =
      config_of([](bus::policy_builder& p) { p.on_any().retry(); }, std::move(options));
  auto generator = nominal();
  CHECK(reason_of(
            bus::decide(config, first_failure(std::make_exception_ptr(http_error{500})), generator))
        == "the custom recoverability policy threw: oops");
}

TEST_CASE("the safety fallback turns an action the endpoint cannot carry out into a move to the "
          "error queue") {
  struct row {
    bus::action wanted;
    bus::capabilities available;
    bus::action decided;
  };
  const std::vector<row> table = {
      {bus::delayed_retry{5min},
       {true, false},
       bus::move_to_error{
           "delayed retry after 00:05:00 cannot be carried out: the transport has no "
           "delayed delivery",
           ""}},
      {bus::immediate_retry{200ms},
       {false, true},
       bus::move_to_error{"immediate retry after 00:00:00.200 cannot be carried out: immediate "
                          "retries are not available on this endpoint",
                          ""}},
      {bus::delayed_retry{5min}, {false, true}, bus::delayed_retry{5min}},
      {bus::immediate_retry{-3s}, {true, true}, bus::immediate_retry{0ms}},
      {bus::discard{"dup"}, {false, false}, bus::discard{"dup"}},
  };
  for (const auto& r : table) {
    CAPTURE(bus::describe(r.wanted));
    bus::recoverability_options options;
    options.available = r.available;
    options.custom = [wanted = r.wanted](const bus::recoverability_config&,
                                         const bus::error_context&,
                                         bus::random_source) { return wanted; };
    const auto config =
        config_of([](bus::policy_builder& p) { p.on_any().retry(); }, std::move(options));
    auto generator = nominal();
    CHECK(bus::decide(config, first_failure(std::make_exception_ptr(http_error{500})), generator)
          == r.decided);
  }
}

TEST_CASE("the default policy skips a tier the endpoint cannot carry out") {
  struct row {
    bus::capabilities available;
    std::vector<std::string> steps;
    std::string reason;
  };
  const std::vector<row> table = {
      {{false, true},
       {"redeliver 5min", "redeliver 15min", "redeliver 30min", "error"},
       "rule #1 on_any(): retries exhausted after 4 attempts (0 immediate retries, 3 "
       "redeliveries); "
       "immediate retries are not available on this endpoint"},
      {{true, false},
       {"retry 200ms", "retry 400ms", "retry 800ms", "error"},
       "rule #1 on_any(): retries exhausted after 4 attempts (3 immediate retries, 0 "
       "redeliveries); "
       "the transport has no delayed delivery"},
  };
  for (const auto& r : table) {
    bus::recoverability_options options;
    options.available = r.available;
    const auto config = config_of(
        [](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); }, std::move(options));
    auto generator = nominal();
    const auto result = always_failing(config, std::make_exception_ptr(http_error{500}), generator);
    CHECK(result.steps == r.steps);
    CHECK(reason_of(result.last) == r.reason);
  }
}

TEST_CASE("a context without an exception goes to the error queue") {
  const auto config = config_of([](bus::policy_builder& p) { p.on_any().retry(); });
  auto generator = nominal();
  CHECK(reason_of(bus::decide(config, first_failure(nullptr), generator))
        == "the error context holds no exception");
}

TEST_CASE("a custom policy's delay beyond the longest the bus schedules is clamped, and the action "
          "says so") {
  using days = std::chrono::duration<long long, std::ratio<86400>>;
  const bus::duration two_years = days(730);
  struct row {
    bus::action wanted;
    bus::action decided;
    std::string described;
  };
  const std::vector<row> table = {
      {bus::delayed_retry{two_years},
       bus::delayed_retry{bus::max_scheduled_delay, two_years},
       "delayed retry after 8760:00:00 (clamped from 17520:00:00)"},
      {bus::immediate_retry{bus::duration::max()},
       bus::immediate_retry{bus::max_scheduled_delay, bus::duration::max()},
       "immediate retry after 8760:00:00 (clamped from 2562047788015:12:55.807)"},
      {bus::delayed_retry{bus::max_scheduled_delay}, bus::delayed_retry{bus::max_scheduled_delay},
       "delayed retry after 8760:00:00"},
      {bus::immediate_retry{5s}, bus::immediate_retry{5s}, "immediate retry after 00:00:05"},
  };
  for (const auto& r : table) {
    CAPTURE(bus::describe(r.wanted));
    bus::recoverability_options options;
    options.custom = [wanted = r.wanted](const bus::recoverability_config&,
                                         const bus::error_context&,
                                         bus::random_source) { return wanted; };
    const auto config =
        config_of([](bus::policy_builder& p) { p.on_any().retry(); }, std::move(options));
    auto generator = nominal();
    const auto decided =
        bus::decide(config, first_failure(std::make_exception_ptr(http_error{500})), generator);
    CHECK(decided == r.decided);
    CHECK(bus::describe(decided) == r.described);
  }
}

TEST_CASE("rules that were never validated cannot make decide() return a delay beyond the limit "
          "or a due time that overflows") {
  // Built by hand, past validate(): no cap on the delays, and counters at
  // the far end of their ranges.
  bus::rule r;
  r.retry = bus::make_retry_schedule(
      bus::backoff_delays{std::numeric_limits<int>::max() - 1, 1h, bus::backoff::exponential});
  r.retry->max_delay = bus::duration::max();
  r.redelivery = bus::make_redelivery_schedule(
      bus::backoff_delays{std::numeric_limits<int>::max(), 1h, bus::backoff::linear});
  r.redelivery->max_delay = bus::duration::max();
  bus::recoverability_config config;
  config.rules.add(r);
  config.options.max_retry_time = bus::duration::max();
  const bus::time_point latest = bus::from_unix_ms(bus::max_unix_ms);
  struct row {
    const char* what;
    int immediate_attempts;
    std::uint32_t delivery_count;
    std::uint64_t draw;
  };
  const std::vector<row> table = {
      {"the 62nd immediate retry", 62, 0, bus::test::middle},
      {"the last immediate retry", std::numeric_limits<int>::max() - 1, 0, bus::test::highest},
      {"a redelivery far up the linear backoff", std::numeric_limits<int>::max(),
       std::numeric_limits<int>::max() - 2, bus::test::highest},
  };
  for (const auto& row : table) {
    INFO(row.what);
    bus::error_context context;
    context.exception = std::make_exception_ptr(http_error{500});
    context.immediate_attempts = row.immediate_attempts;
    context.delivery_count = row.delivery_count;
    context.first_failure = bus::from_unix_ms(0);
    context.now = latest;
    fixed_draw generator{row.draw};
    const auto decided = bus::decide(config, context, generator);
    bus::duration delay{};
    std::optional<bus::duration> clamped_from;
    if (const auto* retry = std::get_if<bus::immediate_retry>(&decided)) {
      delay = retry->delay;
      clamped_from = retry->clamped_from;
    } else if (const auto* redelivery = std::get_if<bus::delayed_retry>(&decided)) {
      delay = redelivery->delay;
      clamped_from = redelivery->clamped_from;
    } else {
      FAIL("expected a retry, got " << bus::describe(decided));
    }
    CHECK(delay == bus::max_scheduled_delay);
    CHECK(clamped_from.has_value());
    // The due time is representable: later than now, by exactly the delay.
    const auto due = context.now + delay;
    CHECK(due > context.now);
    CHECK(bus::to_unix_ms(due) - bus::to_unix_ms(context.now) == delay.count());
  }
}

TEST_CASE("the time since the first failure cannot overflow, whatever the context holds") {
  const auto config = config_of([](bus::policy_builder& p) { p.on_any().retry(1); });
  auto generator = nominal();
  bus::error_context context;
  context.exception = std::make_exception_ptr(http_error{500});
  // A first failure at the start of the clock's range and now at its end:
  // their difference does not fit in the clock's duration.
  context.first_failure = bus::time_point::min();
  context.now = bus::time_point::max();
  CHECK(reason_of(bus::decide(config, context, generator))
        == "rule #1 on_any(): retry time limit of 24:00:00 since the first failure reached");
  // A first failure after now: no time has passed.
  context.first_failure = bus::time_point::max();
  context.now = bus::time_point::min();
  CHECK(bus::decide(config, context, generator) == bus::action{bus::immediate_retry{200ms}});
}
