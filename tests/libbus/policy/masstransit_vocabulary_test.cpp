// MassTransit's retry vocabulary (seed 003) expressed on the same engine:
// one test per retry policy kind and per exception filter, each showing the
// equivalent rule and what it does to a handler that always fails.
#include "bus/policy/decide.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;

namespace masstransit_vocabulary_test {

// .NET's DataException, InvalidOperationException and InvalidCastException.
struct data_error : std::runtime_error {
  explicit data_error(const std::string& what) : std::runtime_error(what) {}
};
struct invalid_operation : std::logic_error {
  invalid_operation() : std::logic_error("invalid operation") {}
};
struct invalid_cast : std::logic_error {
  invalid_cast() : std::logic_error("invalid cast") {}
};

} // namespace masstransit_vocabulary_test

using namespace masstransit_vocabulary_test;
using namespace bus::test;

namespace {

// The actions for a handler that always throws `exception`, as summaries:
// "retry 200ms", "redeliver 5min", "error".
template <class E>
std::vector<std::string> always_failing(const configure_fn& configure, E exception) {
  const auto config = bus::test::config_of(bus::scope_level::endpoint, configure);
  bus::error_context context;
  context.exception = std::make_exception_ptr(exception);
  bus::test::fixed_draw generator; // the middle draw: the nominal delays
  std::vector<std::string> steps;
  for (int attempt = 1; attempt <= 100; ++attempt) {
    const auto decided = bus::decide(config, context, generator);
    steps.push_back(bus::test::summary(decided));
    if (std::holds_alternative<bus::immediate_retry>(decided)) {
      ++context.immediate_attempts;
    } else if (std::holds_alternative<bus::delayed_retry>(decided)) {
      ++context.delivery_count;
      context.immediate_attempts = 1;
    } else {
      break;
    }
  }
  return steps;
}

std::vector<std::string> times(int n, const std::string& step, const std::string& last) {
  std::vector<std::string> out(static_cast<std::size_t>(n), step);
  out.push_back(last);
  return out;
}

} // namespace

TEST_CASE("MassTransit's None is a dead-lettering rule") {
  // r.None()
  CHECK(always_failing([](bus::policy_builder& p) { p.on_any().dead_letter(); }, data_error("x"))
        == std::vector<std::string>{"error"});
  CHECK(always_failing([](bus::policy_builder& p) { p.on_any().retry(0); }, data_error("x"))
        == std::vector<std::string>{"error"});
}

TEST_CASE("MassTransit's Immediate(5) is five retries without delay") {
  // r.Immediate(5)
  CHECK(always_failing(
            [](bus::policy_builder& p) { p.on_any().retry(5, 0ms, bus::backoff::constant); },
            data_error("x"))
        == times(5, "retry 0ms", "error"));
}

TEST_CASE("MassTransit's Interval(10, 200 ms) is a constant backoff without jitter") {
  // r.Interval(10, TimeSpan.FromMilliseconds(200))
  CHECK(always_failing(
            [](bus::policy_builder& p) {
              p.on_any().retry(10, 200ms, bus::backoff::constant).jitter(false);
            },
            data_error("x"))
        == times(10, "retry 200ms", "error"));
}

TEST_CASE("MassTransit's Intervals is one retry per explicit interval") {
  // r.Intervals(100, 500, 2000)
  CHECK(always_failing(
            [](bus::policy_builder& p) {
              p.on_any().retry({100ms, 500ms, 2s}).jitter(false);
            },
            data_error("x"))
        == std::vector<std::string>{"retry 100ms", "retry 500ms", "retry 2s", "error"});
}

TEST_CASE(
    "MassTransit's Exponential is an exponential backoff from the minimum, capped at the maximum") {
  // r.Exponential(5, TimeSpan.FromMilliseconds(100), TimeSpan.FromSeconds(1), ...). MassTransit
  // randomises the growth by its interval delta; here the jitter does that job.
  CHECK(always_failing(
            [](bus::policy_builder& p) {
              p.on_any().retry(5, 100ms, bus::backoff::exponential).jitter(false).max_delay(1s);
            },
            data_error("x"))
        == std::vector<std::string>{"retry 100ms", "retry 200ms", "retry 400ms", "retry 800ms",
                                    "retry 1s", "error"});
}

TEST_CASE("MassTransit's Incremental is a delay function of the attempt") {
  // r.Incremental(4, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(2))
  CHECK(always_failing(
            [](bus::policy_builder& p) {
              p.on_any().retry(4, [](const std::exception_ptr&, int attempt) {
                return 1s + (attempt - 1) * 2s;
              });
            },
            data_error("x"))
        == std::vector<std::string>{"retry 1s", "retry 3s", "retry 5s", "retry 7s", "error"});
}

TEST_CASE("MassTransit's Handle<T>() retries T only: a rule for T and a dead-lettering catch-all") {
  // r.Handle<ArgumentNullException>(); r.Immediate(2)
  const configure_fn handle = [](bus::policy_builder& p) {
    p.on<argument_null_error>().retry(2, 0ms);
    p.on_any().dead_letter();
  };
  CHECK(always_failing(handle, argument_null_error("id")) == times(2, "retry 0ms", "error"));
  CHECK(always_failing(handle, invalid_operation{}) == std::vector<std::string>{"error"});
}

TEST_CASE("MassTransit's Handle<T>(filter) retries the T that pass the filter") {
  // r.Handle<DataException>(x => x.Message.Contains("SQL")); r.Immediate(5)
  const configure_fn handle = [](bus::policy_builder& p) {
    p.on<data_error>([](const data_error& e) {
       return std::string(e.what()).find("SQL") != std::string::npos;
     }).retry(5, 0ms);
    p.on_any().dead_letter();
  };
  CHECK(always_failing(handle, data_error("SQL timeout")) == times(5, "retry 0ms", "error"));
  CHECK(always_failing(handle, data_error("disk")) == std::vector<std::string>{"error"});
}

TEST_CASE("MassTransit's Ignore(types...) dead-letters those types and retries the rest") {
  // r.Ignore(typeof(InvalidOperationException), typeof(InvalidCastException)); r.Interval(2, 200)
  const configure_fn ignore = [](bus::policy_builder& p) {
    p.on<invalid_operation>().dead_letter();
    p.on<invalid_cast>().dead_letter();
    p.on_any().retry(2, 200ms, bus::backoff::constant).jitter(false);
  };
  CHECK(always_failing(ignore, invalid_operation{}) == std::vector<std::string>{"error"});
  CHECK(always_failing(ignore, invalid_cast{}) == std::vector<std::string>{"error"});
  CHECK(always_failing(ignore, data_error("x")) == times(2, "retry 200ms", "error"));
}

TEST_CASE("MassTransit's Ignore<T>(filter) dead-letters the T that pass the filter and retries the "
          "rest") {
  // r.Ignore<ArgumentException>(t => t.ParamName == "orderTotal"); r.Interval(2, 200)
  const configure_fn ignore = [](bus::policy_builder& p) {
    p.on<argument_error>([](const argument_error& e) {
       return e.param_name == "orderTotal";
     }).dead_letter();
    p.on_any().retry(2, 200ms, bus::backoff::constant).jitter(false);
  };
  CHECK(always_failing(ignore, argument_error("orderTotal")) == std::vector<std::string>{"error"});
  CHECK(always_failing(ignore, argument_null_error("orderTotal"))
        == std::vector<std::string>{"error"});
  CHECK(always_failing(ignore, argument_error("customerId")) == times(2, "retry 200ms", "error"));
}

TEST_CASE("MassTransit's delayed redelivery with immediate retries runs a fresh retry cycle per "
          "redelivery") {
  // cfg.UseDelayedRedelivery(r => r.Intervals(5 min, 15 min, 30 min)); cfg.UseMessageRetry(r =>
  // r.Immediate(5))
  const auto steps = always_failing(
      [](bus::policy_builder& p) {
        p.on_any()
            .retry(5, 0ms, bus::backoff::constant)
            .then_redeliver({5min, 15min, 30min})
            .jitter(false);
      },
      data_error("database down"));
  CHECK(steps.size() == 24); // (5 + 1) * (3 + 1)
  CHECK(steps[5] == "redeliver 5min");
  CHECK(steps[11] == "redeliver 15min");
  CHECK(steps[17] == "redeliver 30min");
  CHECK(steps.back() == "error");
}
