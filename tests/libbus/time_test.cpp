#include <catch2/catch.hpp>

#include "bus/time.hpp"

using namespace std::chrono_literals;

TEST_CASE("time points survive the round trip through Unix milliseconds") {
  auto t = bus::from_unix_ms(1'763'800'000'123);
  CHECK(bus::to_unix_ms(t) == 1'763'800'000'123);
  CHECK(bus::to_iso8601(t) == "2025-11-22T08:26:40.123Z");
  CHECK(bus::to_iso8601(bus::from_unix_ms(0)) == "1970-01-01T00:00:00.000Z");
}

TEST_CASE("durations print as NServiceBus prints retry delays") {
  CHECK(bus::to_hms(10s) == "00:00:10");
  CHECK(bus::to_hms(90min) == "01:30:00");
  CHECK(bus::to_hms(1500ms) == "00:00:01.500");
  CHECK(bus::to_hms(-5ms) == "00:00:00");
}

TEST_CASE("a Unix time beyond the year 2200 is refused instead of overflowing") {
  CHECK(bus::checked_from_unix_ms(bus::max_unix_ms).has_value());
  CHECK(bus::checked_from_unix_ms(-bus::max_unix_ms).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(bus::max_unix_ms + 1).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(1'700'000'000'000'000'000).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(INT64_MIN).has_value());
  CHECK(bus::to_iso8601(*bus::checked_from_unix_ms(bus::max_unix_ms)) == "2200-01-01T00:00:00.000Z");
}
