// The deliveries of one consuming channel, in delivery-tag order, and which
// of them are settled: what lets the consuming thread send the acks the
// application gave as one basic.ack with AMQP's `multiple` flag, where that
// acknowledges nothing the application has not acknowledged.
//
// A basic.ack(tag, multiple) settles every delivery of the channel with a
// tag up to `tag` that the broker still counts as outstanding. So acks are
// coalesced only over a run of deliveries, from the oldest one not settled
// on the wire, in which each is either acknowledged by the application or
// already settled on the wire (a reject sent earlier: the broker no longer
// counts it). A delivery still open (its handler running) ends the run; an
// ack above it goes out alone. A reject is never overtaken: the owner calls
// flush() before it sends one, so acks queued before it go first and the
// rejected delivery is open until then, ending any run that reaches it.
//
// Pure bookkeeping, no I/O: the owner (the consuming thread) passes a
// function that sends one basic.ack. Broker tags on a channel count up from
// 1 with every delivery; should one ever be skipped, the window stops
// coalescing for that channel and every ack goes out alone. So it does when
// it would have to remember more than `limit` deliveries (one byte each):
// a delivery held open for hours while thousands a second pass it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace bus::detail {

class ack_window {
public:
  static constexpr std::size_t default_limit = std::size_t{1} << 20;

  explicit ack_window(std::size_t limit = default_limit) : limit_(limit) {}

  // A new delivery on the channel, handed to the application.
  void delivered(std::uint64_t tag) {
    if (broken_)
      return;
    if (tag != base_ + states_.size() || states_.size() >= limit_) {
      broken_ = true; // a tag skipped or repeated, or too many: stop coalescing
      states_.clear();
      pending_.clear();
      return;
    }
    states_.push_back(state::open);
  }

  // The application acknowledged `tag`: queued until flush(). `send_now`
  // is called at once instead when the window cannot coalesce.
  template <class SendAck> void ack(std::uint64_t tag, SendAck&& send_now) {
    auto* s = find(tag);
    if (!s || *s != state::open)
      return send_now(tag, false);
    *s = state::ack_pending;
    pending_.push_back(tag);
  }

  // `tag` was settled on the wire by the owner (a reject it just sent,
  // after a flush()).
  void settled_on_wire(std::uint64_t tag) {
    if (auto* s = find(tag))
      *s = state::settled;
    advance();
  }

  // Sends the queued acks: one basic.ack(multiple) for those in the run at
  // the front, one each for the rest. `send(tag, multiple)`.
  template <class SendAck> void flush(SendAck&& send) {
    std::uint64_t covered = 0;
    std::size_t in_run = 0;
    while (!states_.empty() && states_.front() != state::open) {
      if (states_.front() == state::ack_pending) {
        covered = base_;
        ++in_run;
      }
      states_.pop_front();
      ++base_;
    }
    if (in_run > 0)
      send(covered, in_run > 1);
    for (auto tag : pending_) {
      auto* s = find(tag);
      if (!s || *s != state::ack_pending)
        continue; // in the run, sent above
      send(tag, false);
      *s = state::settled;
    }
    pending_.clear();
  }

  // Acks queued and not sent yet.
  [[nodiscard]] bool has_pending() const noexcept { return !pending_.empty(); }

  // A new channel: nothing delivered yet.
  void reset() {
    states_.clear();
    pending_.clear();
    base_ = 1;
    broken_ = false;
  }

private:
  enum class state : unsigned char { open, ack_pending, settled };

  state* find(std::uint64_t tag) {
    if (broken_ || tag < base_ || tag - base_ >= states_.size())
      return nullptr;
    return &states_[static_cast<std::size_t>(tag - base_)];
  }

  // Drops settled deliveries from the front: nothing is pending there.
  void advance() {
    while (!states_.empty() && states_.front() == state::settled) {
      states_.pop_front();
      ++base_;
    }
  }

  std::deque<state> states_; // from base_ on, one per delivery
  std::uint64_t base_ = 1;   // the tag of states_.front()
  std::vector<std::uint64_t> pending_; // acked by the application, not sent yet
  std::size_t limit_;
  bool broken_ = false;
};

} // namespace bus::detail
