#include "bus/stream.hpp"

#include <catch2/catch.hpp>

#include <optional>

TEST_CASE("a reader's offset moves only over messages settled in order") {
  bus::stream_position at;
  CHECK_FALSE(at.committed());
  CHECK_FALSE(at.resume_at());
  for (std::uint64_t o = 10; o <= 13; ++o)
    REQUIRE(at.read(o));
  CHECK(at.last_read() == 13);
  // Two slots: 11 and 13 settle first; nothing below 10 is known settled.
  CHECK(at.settled(11));
  CHECK(at.settled(13));
  CHECK_FALSE(at.committed());
  CHECK(at.unsettled() == 4);
  // 10 settles: the offset moves over it and 11, and stops at 12.
  CHECK(at.settled(10));
  CHECK(at.committed() == 11);
  CHECK(at.resume_at() == 12);
  CHECK(at.unsettled() == 2);
  CHECK(at.settled(12));
  CHECK(at.committed() == 13);
  CHECK(at.resume_at() == 14);
  CHECK(at.unsettled() == 0);
}

TEST_CASE("a reader's offset steps over gaps in the stream's offsets") {
  bus::stream_position at{std::uint64_t{100}};
  CHECK(at.resume_at() == 100);
  REQUIRE(at.read(100));
  REQUIRE(at.read(105)); // retention, or a chunk's filtered entries
  CHECK(at.settled(105));
  CHECK_FALSE(at.committed());
  CHECK(at.resume_at() == 100); // 100 is still in flight: a restart reads it again
  CHECK(at.settled(100));
  CHECK(at.committed() == 105);
  CHECK(at.resume_at() == 106);
}

TEST_CASE("a delivery out of order, twice, or a settling of one never read is refused") {
  bus::stream_position at;
  REQUIRE(at.read(5));
  CHECK_FALSE(at.read(5));
  CHECK_FALSE(at.read(4));
  CHECK_FALSE(at.settled(6)); // not read
  CHECK(at.settled(5));
  CHECK_FALSE(at.settled(5)); // settled already, and committed
  REQUIRE(at.read(7));
  CHECK_FALSE(at.settled(6));
  CHECK(at.committed() == 5);
}

TEST_CASE("a reader's lag counts what the stream holds after its offset") {
  bus::stream_position fresh;
  CHECK(fresh.lag(1000) == 0); // where it stands is not known yet

  bus::stream_position at{std::uint64_t{0}};
  CHECK(at.lag(9) == 10); // offsets 0..9, none settled
  REQUIRE(at.read(0));
  REQUIRE(at.read(1));
  CHECK(at.settled(0));
  CHECK(at.lag(9) == 9);
  CHECK(at.settled(1));
  CHECK(at.lag(1) == 0);
  CHECK(at.lag(0) == 0); // a tail read before the reader moved on
}

TEST_CASE("a stream start reads as the user wrote it") {
  CHECK(to_string(bus::stream_start::first()) == "first");
  CHECK(to_string(bus::stream_start::last()) == "last");
  CHECK(to_string(bus::stream_start{}) == "next");
  CHECK(to_string(bus::stream_start::at_offset(42)) == "offset 42");
  CHECK(to_string(bus::stream_start::at_time(bus::from_unix_ms(1'795'000'000'000)))
        == "time " + bus::to_iso8601(bus::from_unix_ms(1'795'000'000'000)));
}

TEST_CASE("a stream's retention must not be negative") {
  CHECK(validate(bus::stream_retention{}).empty());
  CHECK(validate(bus::stream_retention{1'000'000, std::chrono::hours(24)}).empty());
  CHECK(validate(bus::stream_retention{0, std::chrono::seconds(-1)})
        == "a stream's max age is -1 s; it must be positive, or zero for no limit");
}
