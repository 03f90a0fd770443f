// The deliveries an endpoint offers ahead to its busy consumers, shared
// with them: whichever consumer ends its current delivery first takes the
// next one from here, on its own thread, and goes on to it instead of
// sleeping until the endpoint hears of its report and hands it another.
// Waking a sleeping thread for each delivery costs more than a short
// handler; a consumer that finds work here never sleeps.
//
// The endpoint decides what is offered and takes back what no consumer
// took (a consumer went idle, a stop, a breaker, rate limiting). The mutex
// decides between the two: a delivery is taken by one consumer or
// withdrawn by the endpoint, never both. The consumer that took one names
// it in its report of the one before, so the endpoint's record of who
// works on what stays exact.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bus/transport.hpp"
#include "delivery_claim.hpp"

namespace bus::detail {

struct offered_delivery {
  std::uint64_t id = 0; // the endpoint's number for it: a consumer names it
  delivery item;
  claim_ptr claim;
};

class ready_line {
public:
  // How long a consumer that found the line empty looks again before it
  // reports itself idle and its thread sleeps: the delivery its own
  // acknowledgement released is on its way to the endpoint, and from there
  // to the line. A no-op handler at 8 slots on 2 cores: 1.4x the messages
  // at 20 us, and 1.08-1.25x that again at 50 us, where 100 us added
  // nothing more (docs/performance.md, "A longer look before sleeping");
  // it is what a thread burns after its last delivery.
  static constexpr std::chrono::microseconds linger{50};
  // Only after an attempt shorter than this: handlers that block (10 ms
  // each) ran 3% slower when their threads lingered.
  static constexpr std::chrono::microseconds short_attempt{1000};

  void offer(offered_delivery d) {
    std::lock_guard<std::mutex> guard(mutex_);
    items_.push_back(std::move(d));
  }

  // A consumer that ended its delivery: the oldest offered, if any.
  [[nodiscard]] std::optional<offered_delivery> take() {
    std::lock_guard<std::mutex> guard(mutex_);
    if (items_.empty())
      return std::nullopt;
    auto d = std::move(items_.front());
    items_.pop_front();
    return d;
  }

  // As take(), but a line found empty is looked at again, yielding the
  // processor in between, until `patience` has passed: the endpoint may be
  // about to offer, and a thread that sleeps now must be woken for it.
  [[nodiscard]] std::optional<offered_delivery> take_lingering(std::chrono::nanoseconds patience) {
    auto until = std::chrono::steady_clock::now() + patience;
    for (;;) {
      if (auto d = take())
        return d;
      if (std::chrono::steady_clock::now() >= until)
        return std::nullopt;
      std::this_thread::yield();
    }
  }

  // The endpoint: the oldest `n` not taken, in their order.
  [[nodiscard]] std::vector<offered_delivery> withdraw(std::size_t n) {
    std::lock_guard<std::mutex> guard(mutex_);
    std::vector<offered_delivery> back;
    while (back.size() < n && !items_.empty()) {
      back.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    return back;
  }

private:
  std::mutex mutex_;
  std::deque<offered_delivery> items_;
};

} // namespace bus::detail
