#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>

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
  CHECK(bus::to_hms(65007ms) == "00:01:05.007");
  CHECK(bus::to_hms(100h + 59min + 59s + 90ms) == "100:59:59.090");
}

TEST_CASE("a Unix time beyond the year 2200 is refused instead of overflowing") {
  CHECK(bus::checked_from_unix_ms(bus::max_unix_ms).has_value());
  CHECK(bus::checked_from_unix_ms(-bus::max_unix_ms).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(bus::max_unix_ms + 1).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(1'700'000'000'000'000'000).has_value());
  CHECK_FALSE(bus::checked_from_unix_ms(INT64_MIN).has_value());
  CHECK(bus::to_iso8601(*bus::checked_from_unix_ms(bus::max_unix_ms)) == "2200-01-01T00:00:00.000Z");
}

TEST_CASE("a time written by to_iso8601 is read back, and anything else is refused") {
  struct row {
    const char* text;
    std::optional<std::int64_t> unix_ms;
  };
  const row table[] = {
      {"2025-11-22T08:26:40.123Z", 1'763'800'000'123},
      {"1970-01-01T00:00:00.000Z", 0},
      {"2200-01-01T00:00:00.000Z", bus::max_unix_ms},
      {"2025-11-22T08:26:40Z", 1'763'800'000'000},
      {"2025-11-22T08:26:40.1Z", 1'763'800'000'100},
      {"2025-11-22T08:26:40.123456789Z", 1'763'800'000'123},
      {"2024-02-29T23:59:59.999Z", 1'709'251'199'999},
      // Out of bounds: before the epoch, after the year 2200.
      {"1969-12-31T23:59:59.999Z", std::nullopt},
      {"2200-01-01T00:00:00.001Z", std::nullopt},
      {"9999-12-31T23:59:59.999Z", std::nullopt},
      // Dates and times that do not exist.
      {"2023-02-29T00:00:00.000Z", std::nullopt},
      {"2025-13-01T00:00:00.000Z", std::nullopt},
      {"2025-00-10T00:00:00.000Z", std::nullopt},
      {"2025-04-31T00:00:00.000Z", std::nullopt},
      {"2025-11-22T24:00:00.000Z", std::nullopt},
      {"2025-11-22T08:60:00.000Z", std::nullopt},
      {"2025-11-22T08:26:60.000Z", std::nullopt},
      // Other forms.
      {"", std::nullopt},
      {"t", std::nullopt},
      {"1763800000123", std::nullopt},
      {"2025-11-22 08:26:40.123Z", std::nullopt},
      {"2025-11-22T08:26:40.123", std::nullopt},
      {"2025-11-22T08:26:40.123+01:00", std::nullopt},
      {"2025-11-22T08:26:40.Z", std::nullopt},
      {"2025-11-22T08:26:40.1234567890Z", std::nullopt},
      {"2025-11-22T08:26:40.123Zjunk", std::nullopt},
      {"+025-11-22T08:26:40.123Z", std::nullopt},
      {"-001-11-22T08:26:40.123Z", std::nullopt},
      {"2025-1-22T08:26:40.123Z", std::nullopt},
  };
  for (const auto& r : table) {
    INFO(r.text);
    const auto read = bus::from_iso8601(r.text);
    REQUIRE(read.has_value() == r.unix_ms.has_value());
    if (read)
      CHECK(bus::to_unix_ms(*read) == *r.unix_ms);
  }
}

TEST_CASE("every millisecond time in range survives the round trip through ISO 8601") {
  for (const std::int64_t ms : {std::int64_t{0}, std::int64_t{1}, std::int64_t{951'782'400'000},
                                std::int64_t{4'107'542'399'999}, bus::max_unix_ms - 1,
                                bus::max_unix_ms}) {
    const auto t = bus::from_unix_ms(ms);
    const auto read = bus::from_iso8601(bus::to_iso8601(t));
    REQUIRE(read.has_value());
    CHECK(*read == t);
  }
}
