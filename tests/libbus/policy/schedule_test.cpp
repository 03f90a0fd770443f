#include "bus/policy/schedule.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "support/policy_support.hpp"

using namespace std::chrono_literals;
using bus::test::fixed_draw;
using bus::test::highest;

namespace {

std::vector<bus::duration> nominal_delays(const bus::retry_schedule& s, int attempts) {
  std::vector<bus::duration> out;
  for (int attempt = 1; attempt <= attempts; ++attempt)
    out.push_back(bus::nominal_delay(s, attempt, nullptr));
  return out;
}

} // namespace

TEST_CASE(
    "the default retry schedule is Mocha's: 3 retries from 200 ms, exponential, jitter, 30 s cap") {
  const auto s = bus::default_retry_schedule();
  CHECK(bus::retry_count(s) == 3);
  CHECK(nominal_delays(s, 3) == std::vector<bus::duration>{200ms, 400ms, 800ms});
  CHECK(s.jitter);
  CHECK(s.max_delay == 30s);
}

TEST_CASE("the default redelivery schedule is Mocha's: 5, 15 and 30 minutes, jitter, 1 h cap") {
  const auto s = bus::default_redelivery_schedule();
  CHECK(bus::retry_count(s) == 3);
  CHECK(nominal_delays(s, 3) == std::vector<bus::duration>{5min, 15min, 30min});
  CHECK(s.jitter);
  CHECK(s.max_delay == 1h);
}

TEST_CASE("the maximum delay caps every delay of a schedule") {
  auto s = bus::make_retry_schedule(bus::backoff_delays{6, 5s, bus::backoff::exponential});
  CHECK(nominal_delays(s, 6) == std::vector<bus::duration>{5s, 10s, 20s, 30s, 30s, 30s});
  s.max_delay = 12s;
  CHECK(nominal_delays(s, 3) == std::vector<bus::duration>{5s, 10s, 12s});
}

TEST_CASE("the maximum delay caps a jittered delay too") {
  const auto s = bus::make_retry_schedule(bus::backoff_delays{5, 20s, bus::backoff::linear});
  fixed_draw top{highest};
  CHECK(bus::planned_delay(s, 1, nullptr, top) == 24s); // below the cap: jitter applies
  CHECK(bus::planned_delay(s, 2, nullptr, top) == 30s); // 40 s capped, then 48 s capped
}

TEST_CASE("a schedule without jitter draws nothing from the generator") {
  auto s = bus::default_retry_schedule();
  s.jitter = false;
  fixed_draw generator{highest};
  CHECK(bus::planned_delay(s, 2, nullptr, generator) == 400ms);
  CHECK(generator.draws == 0);
}

TEST_CASE("a jittered schedule draws once per delay") {
  const auto s = bus::default_retry_schedule();
  fixed_draw generator{highest};
  CHECK(bus::planned_delay(s, 1, nullptr, generator) == 240ms);
  CHECK(generator.draws == 1);
}

TEST_CASE("explicit intervals give one retry each, in order") {
  const auto s = bus::make_retry_schedule(bus::interval_delays{{100ms, 500ms, 2s}});
  CHECK(bus::retry_count(s) == 3);
  CHECK(nominal_delays(s, 3) == std::vector<bus::duration>{100ms, 500ms, 2s});
  CHECK(bus::nominal_delay(s, 7, nullptr) == 2s); // past the list: the last interval
}

TEST_CASE(
    "a delay read from the exception is taken as given: no jitter, but capped and never negative") {
  const auto s = bus::make_redelivery_schedule(
      bus::exception_delays{3, [](const bus::caught_exception&, int attempt) {
                              return attempt == 3 ? -1 * 5s : attempt * 40min;
                            }});
  CHECK_FALSE(s.jitter);
  CHECK(s.max_delay == 1h);
  CHECK(nominal_delays(s, 3) == std::vector<bus::duration>{40min, 1h, 0ms});
}

TEST_CASE("a delay function's exception passes through the schedule") {
  const auto s = bus::make_retry_schedule(
      bus::exception_delays{1, [](const bus::caught_exception&, int) -> bus::duration {
                              throw std::runtime_error("no header");
                            }});
  CHECK_THROWS_WITH(bus::nominal_delay(s, 1, nullptr), "no header");
}

TEST_CASE("a negative count allows no retries") {
  const auto s = bus::make_retry_schedule(bus::backoff_delays{-2, 1s, bus::backoff::constant});
  CHECK(bus::retry_count(s) == 0);
}

TEST_CASE("durations print as a user would write them") {
  struct row {
    bus::duration d;
    const char* text;
  };
  const std::vector<row> table = {
      {0ms, "0ms"},   {200ms, "200ms"}, {1500ms, "1500ms"}, {30s, "30s"}, {90s, "90s"},
      {5min, "5min"}, {90min, "90min"}, {1h, "1h"},         {24h, "24h"},
  };
  for (const auto& r : table)
    CHECK(bus::to_short_string(r.d) == r.text);
}
