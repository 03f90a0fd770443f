#include "confirm_stall.hpp"

namespace bus::detail {

confirm_stall::step confirm_stall::next(std::optional<clock::time_point> oldest_sent,
                                        clock::time_point now) const {
  // Nothing late (any more): the channel works.
  if (!oldest_sent || now - *oldest_sent < threshold_)
    return question_ ? step::drop : step::wait;
  if (!question_)
    return step::ask;
  // Unanswered: the network or the broker is not reading (a pause, flow
  // control); the heartbeat ends a dead connection. Answered, but the old
  // channel settled something sent before the question lately: slow.
  if (!question_->answered || now - question_->quiet_since < threshold_ / 2)
    return step::wait;
  return step::move;
}

std::optional<confirm_stall::clock::time_point>
confirm_stall::wake_at(std::optional<clock::time_point> oldest_sent) const {
  if (!oldest_sent)
    return std::nullopt;
  if (!question_)
    return *oldest_sent + threshold_;
  if (!question_->answered)
    return std::nullopt;
  return question_->quiet_since + threshold_ / 2;
}

void confirm_stall::asked(std::uint64_t first_after, clock::time_point now) {
  question_ = question{first_after, false, now};
}

void confirm_stall::answered(clock::time_point now) {
  if (!question_)
    return;
  question_->answered = true;
  question_->quiet_since = now;
}

void confirm_stall::settled(std::uint64_t lowest, clock::time_point now) {
  if (question_ && lowest < question_->first_after)
    question_->quiet_since = now;
}

} // namespace bus::detail
