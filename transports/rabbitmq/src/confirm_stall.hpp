// Whether a publishing channel whose confirms are late has lost its
// publishes, or the network or the broker is merely slow: the publisher's
// decision, apart from its I/O so that it can be tested on a clock the test
// sets.
//
// RabbitMQ 3.10 drops what a channel sent to a quorum queue leader that
// died, and never confirms it; a fresh channel reaches the new leader. A
// paused network, a slow fsync or flow control also delay confirms, and
// publishing everything in flight again for them would put each message on
// the queue twice. So the publisher asks first (a fresh channel's
// channel.open, which only a broker reading the connection answers) and
// moves only if the broker answers and the old channel then confirms
// nothing sent before the question for half the threshold.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace bus::detail {

class confirm_stall {
public:
  using clock = std::chrono::steady_clock;

  enum class step {
    wait, // nothing to do now
    ask,  // open a fresh channel, then call asked()
    move, // publish everything unconfirmed again on the asked channel
    drop, // close the asked channel: the old one confirms again
  };

  // `threshold`: how long the oldest publish may wait for its confirm
  // before the channel is suspected.
  explicit confirm_stall(clock::duration threshold) : threshold_(threshold) {}

  // What to do, given when the oldest unconfirmed publish was sent
  // (nullopt: nothing is in flight, or the channel may not be judged now:
  // refusals pending, a blocked connection).
  [[nodiscard]] step next(std::optional<clock::time_point> oldest_sent,
                          clock::time_point now) const;
  // When next() may have something else to say; nullopt: only a frame
  // (the answer, a confirm) can change it.
  [[nodiscard]] std::optional<clock::time_point>
  wake_at(std::optional<clock::time_point> oldest_sent) const;

  // The question went out; publishes numbered from `first_after` on were
  // sent after it.
  void asked(std::uint64_t first_after, clock::time_point now);
  // The broker answered it: it reads this connection.
  void answered(clock::time_point now);
  // The old channel confirmed (or refused) publishes from `lowest` on.
  void settled(std::uint64_t lowest, clock::time_point now);
  // The question is closed: moved, dropped, or its connection gone.
  void reset() { question_.reset(); }

  [[nodiscard]] bool asking() const noexcept { return question_.has_value(); }

private:
  struct question {
    std::uint64_t first_after = 0;
    bool answered = false;
    clock::time_point quiet_since; // the answer, or the last settle of an earlier publish
  };
  clock::duration threshold_;
  std::optional<question> question_;
};

} // namespace bus::detail
