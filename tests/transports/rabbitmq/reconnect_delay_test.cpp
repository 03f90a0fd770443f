// The wait before a reconnect (connection_loop.hpp): libbus's exponential
// backoff from reconnect_delay_min, its +-20% jitter, reconnect_delay_max
// as the cap. No broker, no clock: the generator is seeded.
#include <catch2/catch.hpp>

#include <chrono>
#include <random>

#include "connection_loop.hpp"

using namespace std::chrono_literals;

TEST_CASE("the reconnect delay doubles from the minimum up to the maximum, within 20% either way") {
  bus::rabbitmq_settings s;
  s.reconnect_delay_min = 250ms;
  s.reconnect_delay_max = 4000ms;
  std::mt19937_64 random{42};
  struct row {
    int attempt;
    std::chrono::milliseconds nominal;
  };
  for (auto r : {row{1, 250ms}, row{2, 500ms}, row{3, 1000ms}, row{4, 2000ms}}) {
    for (int draw = 0; draw < 50; ++draw) {
      auto d = bus::detail::reconnect_delay(s, r.attempt, random);
      INFO("attempt " << r.attempt << ": " << d.count() << " ms");
      CHECK(d >= r.nominal * 8 / 10);
      CHECK(d <= r.nominal * 12 / 10);
    }
  }
  // From 4000 ms on (attempt 5, and attempts so late the doubling would
  // overflow) the cap holds, and jitter still spreads the processes out
  // around it rather than making them all wait exactly 4000 ms.
  for (int attempt : {5, 6, 40, 1000}) {
    auto low = 10000ms, high = 0ms;
    for (int draw = 0; draw < 50; ++draw) {
      auto d = bus::detail::reconnect_delay(s, attempt, random);
      low = std::min(low, d);
      high = std::max(high, d);
    }
    INFO("attempt " << attempt << ": " << low.count() << ".." << high.count() << " ms");
    CHECK(low >= 3200ms);
    CHECK(high <= 4800ms);
    CHECK(low < 3900ms);
    CHECK(high > 4100ms);
  }
}
