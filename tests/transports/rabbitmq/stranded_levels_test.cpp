// The judge of stranded delay levels (stranded_levels.hpp), on samples the
// test makes: a level whose held (not ready) messages never shrink for
// longer than its TTL plus the margin is stranded; one whose gap shrinks
// or empties between looks is busy, not stranded, however long it is busy.
#include <catch2/catch.hpp>

#include "stranded_levels.hpp"

using namespace std::chrono_literals;
using bus::detail::level_sample;
using bus::detail::stranded_levels;

namespace {

const bus::detail::delay_levels levels(4, 100ms); // TTLs 100, 200, 400, 800 ms

level_sample sample(unsigned k, std::uint64_t messages, std::uint64_t ready) {
  return {levels.level_name(k), messages, ready, "rabbit@node" + std::to_string(k)};
}

} // namespace

TEST_CASE("a level whose held messages never move past its TTL and the margin is stranded, with "
          "the remedy, and moves again when they leave",
          "[rabbitmq][stranded]") {
  stranded_levels judge(levels, 1s);
  auto t0 = stranded_levels::clock::now();
  // Level 2 (400 ms): 3 held from the first look on.
  CHECK(judge.observe({sample(2, 3, 0)}, t0).empty());
  CHECK(judge.observe({sample(2, 5, 1)}, t0 + 1s).empty()); // 4 held: grew, still not moving
  CHECK(judge.stranded(t0 + 1s).empty());
  auto changes = judge.observe({sample(2, 5, 0)}, t0 + 1500ms); // 1.5 s > 400 ms + 1 s
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].queue == levels.level_name(2));
  CHECK(changes[0].stranded);
  CHECK(changes[0].held == 5);
  CHECK(changes[0].stuck_for == 1500ms);
  CHECK(changes[0].leader == "rabbit@node2");
  auto stalled = judge.stranded(t0 + 2s);
  REQUIRE(stalled.size() == 1);
  CHECK(stalled[0].queue == levels.level_name(2));
  CHECK(stalled[0].messages == 5);
  CHECK(stalled[0].stalled_for == 2s);
  CHECK(stalled[0].remedy == "busctl move-leader " + levels.level_name(2));
  // Still stranded: reported once, not at every look.
  CHECK(judge.observe({sample(2, 6, 0)}, t0 + 3s).empty());
  // Its leader moved: they leave.
  changes = judge.observe({sample(2, 0, 0)}, t0 + 4s);
  REQUIRE(changes.size() == 1);
  CHECK_FALSE(changes[0].stranded);
  CHECK(judge.stranded(t0 + 4s).empty());
}

TEST_CASE("a busy level whose held messages shrink between looks is never stranded, and each "
          "level is judged by its own TTL",
          "[rabbitmq][stranded]") {
  stranded_levels judge(levels, 1s);
  auto t0 = stranded_levels::clock::now();
  // Level 0, always something in transit, but it shrinks now and then.
  std::uint64_t held[] = {4, 6, 3, 7, 9, 2, 5, 8};
  for (int i = 0; i < 8; ++i)
    CHECK(judge.observe({sample(0, held[i] + 10, 10)}, t0 + i * 700ms).empty());
  CHECK(judge.stranded(t0 + 6s).empty());
  // Even a gap that only grows, look after look: the 10 ready at one look
  // have left by a TTL later, so it is moving.
  stranded_levels growing(levels, 1s);
  for (int i = 0; i < 8; ++i)
    CHECK(growing.observe({sample(0, 10 + i, 10)}, t0 + i * 700ms).empty());
  CHECK(growing.stranded(t0 + 6s).empty());

  // Level 3 (800 ms) and level 1 (200 ms) held since t0: after 1.5 s only
  // level 1 is past its TTL + margin; after 2 s both.
  stranded_levels two(levels, 1s);
  CHECK(two.observe({sample(1, 1, 0), sample(3, 1, 0)}, t0).empty());
  auto changes = two.observe({sample(1, 1, 0), sample(3, 1, 0)}, t0 + 1500ms);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].queue == levels.level_name(1));
  changes = two.observe({sample(1, 1, 0), sample(3, 1, 0)}, t0 + 2s);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].queue == levels.level_name(3));
  CHECK(two.stranded(t0 + 2s).size() == 2);
}

TEST_CASE("queues of other level sets are ignored, and a level missing from a look keeps its "
          "state",
          "[rabbitmq][stranded]") {
  stranded_levels judge(levels, 0ms);
  auto t0 = stranded_levels::clock::now();
  bus::detail::delay_levels others(4, 1000ms);
  CHECK(judge.observe({{others.level_name(0), 9, 0, "n"}, sample(0, 2, 0)}, t0).empty());
  CHECK(judge.observe({{others.level_name(0), 9, 0, "n"}, sample(0, 2, 0)}, t0 + 1s).size() == 1);
  CHECK(judge.observe({}, t0 + 2s).empty());
  auto stalled = judge.stranded(t0 + 2s);
  REQUIRE(stalled.size() == 1);
  CHECK(stalled[0].queue == levels.level_name(0));
}
