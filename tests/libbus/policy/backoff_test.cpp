#include "bus/policy/backoff.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/policy_support.hpp"

using namespace std::chrono_literals;
using bus::test::fixed_draw;
using bus::test::highest;
using bus::test::lowest;
using bus::test::middle;

TEST_CASE("each backoff gives its documented delay sequence") {
  struct row {
    bus::backoff kind;
    std::vector<bus::duration> delays; // of attempts 1, 2, 3, 4, 5
  };
  const std::vector<row> table = {
      {bus::backoff::constant, {200ms, 200ms, 200ms, 200ms, 200ms}},
      {bus::backoff::linear, {200ms, 400ms, 600ms, 800ms, 1000ms}},
      {bus::backoff::exponential, {200ms, 400ms, 800ms, 1600ms, 3200ms}},
  };
  for (const auto& r : table) {
    INFO(bus::to_string(r.kind));
    for (int attempt = 1; attempt <= 5; ++attempt)
      CHECK(bus::backoff_delay(r.kind, 200ms, attempt) == r.delays[attempt - 1]);
  }
}

TEST_CASE("a backoff saturates at the largest duration instead of overflowing") {
  const auto max = bus::duration::max();
  CHECK(bus::backoff_delay(bus::backoff::exponential, 1ms, 63)
        == bus::duration(std::int64_t{1} << 62));
  CHECK(bus::backoff_delay(bus::backoff::exponential, 1ms, 64) == max);
  CHECK(bus::backoff_delay(bus::backoff::exponential, 2ms, 63) == max);
  CHECK(bus::backoff_delay(bus::backoff::exponential, 1h, 1000) == max);
  CHECK(bus::backoff_delay(bus::backoff::linear, max / 2, 3) == max);
}

TEST_CASE("a backoff treats a negative base as zero and an attempt below one as the first") {
  CHECK(bus::backoff_delay(bus::backoff::exponential, -5ms, 3) == 0ms);
  CHECK(bus::backoff_delay(bus::backoff::linear, 200ms, 0) == 200ms);
  CHECK(bus::backoff_delay(bus::backoff::exponential, 200ms, -4) == 200ms);
}

TEST_CASE("backoff kinds print their DSL names") {
  CHECK(bus::to_string(bus::backoff::constant) == "constant");
  CHECK(bus::to_string(bus::backoff::linear) == "linear");
  CHECK(bus::to_string(bus::backoff::exponential) == "exponential");
}

TEST_CASE("jitter moves a delay by at most 20 percent either way") {
  struct row {
    std::uint64_t draw;
    bus::duration nominal;
    bus::duration jittered;
  };
  const std::vector<row> table = {
      {lowest, 200ms, 160ms}, {middle, 200ms, 200ms}, {highest, 200ms, 240ms},
      {lowest, 5min, 4min},   {middle, 5min, 5min},   {highest, 5min, 6min},
      {lowest, 1ms, 1ms},     {highest, 1ms, 1ms}, // 0.2 ms rounds away
      {lowest, 3ms, 2ms},     {highest, 3ms, 4ms},
  };
  for (const auto& r : table) {
    CAPTURE(r.draw, r.nominal.count());
    fixed_draw generator{r.draw};
    CHECK(bus::apply_jitter(r.nominal, generator) == r.jittered);
  }
}

TEST_CASE("jitter from a real generator stays within its bounds and spreads over them") {
  std::mt19937_64 generator(42);
  auto smallest = bus::duration::max();
  auto largest = bus::duration::zero();
  for (int i = 0; i < 10'000; ++i) {
    const auto d = bus::apply_jitter(1000ms, generator);
    REQUIRE(d >= 800ms);
    REQUIRE(d <= 1200ms);
    smallest = std::min(smallest, d);
    largest = std::max(largest, d);
  }
  CHECK(smallest < 810ms);
  CHECK(largest > 1190ms);
}

TEST_CASE("jitter is deterministic given the generator") {
  std::mt19937_64 first(7);
  std::mt19937_64 second(7);
  for (int i = 0; i < 100; ++i)
    REQUIRE(bus::apply_jitter(30s, first) == bus::apply_jitter(30s, second));
}

TEST_CASE("a zero delay stays zero under jitter") {
  fixed_draw generator{highest};
  CHECK(bus::apply_jitter(0ms, generator) == 0ms);
}

TEST_CASE("a random source maps draws onto the unit interval exactly") {
  fixed_draw bottom{lowest};
  fixed_draw centre{middle};
  fixed_draw top{highest};
  CHECK(bus::random_source(bottom).unit() == 0.0);
  CHECK(bus::random_source(centre).unit() == 0.5);
  CHECK(bus::random_source(top).unit() < 1.0);
  CHECK(bus::random_source(top).unit() > 0.9999999);
}

TEST_CASE("backoff and jitter at the extremes saturate, and a planned delay never exceeds its cap") {
  const auto max = bus::duration::max();
  CHECK(bus::backoff_delay(bus::backoff::exponential, 1ms, std::numeric_limits<int>::max()) == max);
  CHECK(bus::backoff_delay(bus::backoff::linear, 1ms, std::numeric_limits<int>::max())
        == bus::duration(std::numeric_limits<int>::max()));
  CHECK(bus::backoff_delay(bus::backoff::linear, max, std::numeric_limits<int>::max()) == max);
  CHECK(bus::backoff_delay(bus::backoff::constant, max, std::numeric_limits<int>::max()) == max);
  // Jitter on the largest delays: up saturates, down stays within 20 %.
  for (const auto nominal : {max, max - 1ms, max / 2 + max / 4}) {
    fixed_draw top{highest};
    fixed_draw bottom{lowest};
    fixed_draw centre{middle};
    CHECK(bus::apply_jitter(nominal, top) >= nominal);
    CHECK(bus::apply_jitter(nominal, bottom) < nominal);
    CHECK(bus::apply_jitter(nominal, bottom) > bus::duration::zero());
    CHECK(bus::apply_jitter(nominal, centre) <= max);
  }
  // A schedule without a real cap, far up its backoff, with every draw.
  auto schedule = bus::make_redelivery_schedule(
      bus::backoff_delays{std::numeric_limits<int>::max(), 1h, bus::backoff::exponential});
  for (const auto cap : {max, bus::max_scheduled_delay}) {
    schedule.max_delay = cap;
    for (const auto draw : {lowest, middle, highest}) {
      fixed_draw generator{draw};
      const auto delay =
          bus::planned_delay(schedule, std::numeric_limits<int>::max(), nullptr, generator);
      CHECK(delay <= cap);
      CHECK(delay > bus::duration::zero());
    }
  }
}
