// The wait before the next reconnect attempt: the minimum first, doubled
// after each failure up to the maximum, each with +-20% jitter so that the
// processes of a cluster that lost the broker together do not come back in
// lockstep. Owned by one thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>

namespace bus::detail {

class backoff {
public:
  backoff(std::chrono::milliseconds min, std::chrono::milliseconds max)
      : min_(min), max_(max), next_(min), random_(std::random_device{}()) {}

  std::chrono::milliseconds next() {
    auto base = next_;
    next_ = std::min(max_, next_ * 2);
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
        static_cast<double>(base.count()) * jitter(random_)));
  }

  void reset() { next_ = min_; }

private:
  std::chrono::milliseconds min_, max_, next_;
  std::minstd_rand random_;
};

} // namespace bus::detail
