#include "bus/stream.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

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

namespace {

// A reader of a stream as the runtime and a transport drive its position,
// for the property below: deliveries come in offset order (with the
// stream's gaps), up to `slots` in flight; each ends (handled, or failed
// and moved to the error queue, or discarded: all final) in any order, and
// the position's committed offset is saved after each. A lost connection
// leaves the deliveries in flight to end as they would (nothing delivers
// a stream's message again), and the reading goes on after the last one
// read. A restart loses what was in flight and resumes after the saved
// offset.
struct stream_reader_model {
  std::vector<std::uint64_t> stream; // the offsets the stream holds, increasing
  std::size_t slots = 1;

  std::optional<std::uint64_t> saved;
  bus::stream_position position;
  std::size_t next = 0;             // index into `stream` of the next delivery
  std::vector<std::uint64_t> in_flight;
  std::set<std::uint64_t> ended_here;  // ended since the last restart
  std::map<std::uint64_t, int> reads;  // over every run
  std::set<std::uint64_t> ended_ever;
  std::set<std::uint64_t> read_here;   // read since the last restart

  explicit stream_reader_model(std::vector<std::uint64_t> s, std::size_t k)
    : stream(std::move(s)), slots(k) {}

  bool can_read() const { return next < stream.size() && in_flight.size() < slots; }
  void read() {
    auto o = stream[next++];
    REQUIRE(read_here.insert(o).second); // never twice in one run, across drops too
    REQUIRE(position.read(o));
    in_flight.push_back(o);
    ++reads[o];
  }
  void end(std::size_t which) {
    auto o = in_flight[which];
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(which));
    REQUIRE(position.settled(o));
    ended_here.insert(o);
    ended_ever.insert(o);
    if (position.committed())
      saved = position.committed();
  }
  void drop_connection() {
    // The transport consumes again after the last offset read: `next`
    // stays, and what is in flight ends later as it would have.
  }
  void restart() {
    in_flight.clear();
    ended_here.clear();
    read_here.clear();
    std::optional<std::uint64_t> resume;
    if (saved)
      resume = *saved + 1;
    position = bus::stream_position(resume);
    next = 0;
    while (next < stream.size() && resume && stream[next] < *resume)
      ++next;
  }

  // What the saved offset must be: the last offset of the stream below
  // which every delivery of this run ended, counting everything before the
  // point it resumed from as ended (the run before saved it so).
  std::optional<std::uint64_t> expected_saved(std::optional<std::uint64_t> at_restart) const {
    auto out = at_restart;
    for (auto o : stream) {
      if (at_restart && o <= *at_restart)
        continue;
      if (!ended_here.count(o))
        break;
      out = o;
    }
    return out;
  }
};

} // namespace

TEST_CASE("stream offsets, as a property: through random lost connections, failures and "
          "restarts, the saved offset is the last below which every delivery ended, and only "
          "what was read and not yet saved at a restart is read again") {
  for (std::uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 random(seed);
    auto pick = [&](std::size_t n) {
      return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
    };
    std::vector<std::uint64_t> offsets;
    for (std::uint64_t o = pick(3); offsets.size() < 40; o += 1 + (pick(5) == 0 ? pick(4) : 0))
      offsets.push_back(o); // gaps, as retention and chunk starts leave them
    stream_reader_model reader(offsets, 1 + pick(4));
    INFO("seed " << seed << ", " << reader.slots << " slot(s)");
    auto saved_at_restart = reader.saved;
    // Read and not yet saved at some restart: the only offsets that may be
    // read more than once.
    std::set<std::uint64_t> unsaved_at_a_restart;
    auto read_next = [&] {
      auto o = offsets[reader.next];
      if (reader.reads.count(o) != 0)
        CHECK(unsaved_at_a_restart.count(o) == 1);
      reader.read();
    };
    int restarts_left = static_cast<int>(pick(4));
    for (int step = 0; step < 400 && reader.ended_ever.size() < offsets.size(); ++step) {
      auto what = pick(20);
      if (what < 8 && reader.can_read()) {
        read_next();
      } else if (what < 17 && !reader.in_flight.empty()) {
        reader.end(pick(reader.in_flight.size()));
      } else if (what == 17) {
        reader.drop_connection();
      } else if (what == 18 && restarts_left > 0) {
        --restarts_left;
        for (const auto& [o, times] : reader.reads)
          if (!reader.saved || o > *reader.saved)
            unsaved_at_a_restart.insert(o);
        reader.restart();
        saved_at_restart = reader.saved;
      }
      CHECK(reader.saved == reader.expected_saved(saved_at_restart));
    }
    // The last run goes on until everything has ended.
    while (reader.can_read() || !reader.in_flight.empty()) {
      if (reader.can_read())
        read_next();
      else
        reader.end(pick(reader.in_flight.size()));
      CHECK(reader.saved == reader.expected_saved(saved_at_restart));
    }
    CHECK(reader.ended_ever.size() == offsets.size()); // nothing skipped
    CHECK(reader.saved == offsets.back());
  }
}
