// The publisher's judge of late confirms (confirm_stall.hpp), on a clock
// the test sets: it asks before it moves, moves only when the broker
// answered and the old channel then settled nothing sent before the
// question for half the threshold, and waits out a network that does not
// answer or a broker that still confirms.
#include <catch2/catch.hpp>

#include "confirm_stall.hpp"

using namespace std::chrono_literals;
using bus::detail::confirm_stall;
using step = confirm_stall::step;

namespace {

const auto t0 = confirm_stall::clock::now();

} // namespace

TEST_CASE("a channel whose oldest confirm is late is asked about first, and left only when the "
          "broker answers and the channel stays silent",
          "[rabbitmq][stall]") {
  confirm_stall judge(2s);
  CHECK(judge.next(std::nullopt, t0) == step::wait);
  CHECK(judge.next(t0, t0 + 1999ms) == step::wait);
  CHECK(judge.wake_at(t0) == t0 + 2s);
  REQUIRE(judge.next(t0, t0 + 2s) == step::ask);
  judge.asked(11, t0 + 2s); // publishes 1-10 were sent before the question
  CHECK(judge.asking());
  // Unanswered: only a frame can change that, so no timer either.
  CHECK(judge.next(t0, t0 + 60s) == step::wait);
  CHECK_FALSE(judge.wake_at(t0).has_value());
  judge.answered(t0 + 2100ms);
  CHECK(judge.wake_at(t0) == t0 + 3100ms);
  CHECK(judge.next(t0, t0 + 3099ms) == step::wait);
  // A publish sent after the question settling says nothing of the old ones.
  judge.settled(11, t0 + 3000ms);
  CHECK(judge.next(t0, t0 + 3100ms) == step::move);
}

TEST_CASE("a network that pauses past the threshold leaves the question unanswered, and the "
          "late confirms close it without a move",
          "[rabbitmq][stall]") {
  confirm_stall judge(1s);
  REQUIRE(judge.next(t0, t0 + 1s) == step::ask);
  judge.asked(101, t0 + 1s);
  CHECK(judge.next(t0, t0 + 1500ms) == step::wait);
  // The pause ends: the answer and the confirms arrive together. The
  // oldest now unconfirmed (if any) is younger than the threshold.
  judge.answered(t0 + 1500ms);
  judge.settled(1, t0 + 1500ms);
  CHECK(judge.next(t0 + 1200ms, t0 + 1510ms) == step::drop);
  CHECK(judge.next(std::nullopt, t0 + 1510ms) == step::drop);
  judge.reset();
  CHECK(judge.next(std::nullopt, t0 + 1510ms) == step::wait);
}

TEST_CASE("a broker that answers but confirms slowly keeps the channel while the old publishes "
          "still settle",
          "[rabbitmq][stall]") {
  confirm_stall judge(2s);
  REQUIRE(judge.next(t0, t0 + 2s) == step::ask);
  judge.asked(51, t0 + 2s);
  judge.answered(t0 + 2010ms);
  // Every 500 ms one more of the publishes before the question settles;
  // the oldest still unconfirmed stays older than the threshold.
  for (int i = 1; i <= 8; ++i) {
    auto now = t0 + 2010ms + i * 500ms;
    judge.settled(static_cast<std::uint64_t>(i), now);
    CHECK(judge.next(t0 + 100ms * i, now + 999ms) == step::wait);
  }
  // Then nothing for a whole half threshold: it lost the rest.
  CHECK(judge.next(t0 + 900ms, t0 + 2010ms + 4000ms + 1s) == step::move);
}
