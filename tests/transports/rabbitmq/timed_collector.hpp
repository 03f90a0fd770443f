// Collects deliveries with the time each arrived and which consumer got
// it, for tests about timing (delays) and sharing (competing consumers).
// Waits wake on each delivery, with a deadline; nothing polls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "bus/transport.hpp"

namespace bus::test {

class timed_collector {
public:
  using clock = std::chrono::steady_clock;

  struct arrival {
    bus::delivery item;
    clock::time_point at;
    int consumer = 0;
  };

  bus::delivery_handler handler(int consumer = 0) {
    return [this, consumer](bus::delivery d) {
      std::lock_guard<std::mutex> guard(mutex_);
      arrivals_.push_back(arrival{std::move(d), clock::now(), consumer});
      changed_.notify_all();
    };
  }

  bool wait_for(std::size_t n, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return arrivals_.size() >= n; });
  }

  std::vector<arrival> arrivals() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return arrivals_;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return arrivals_.size();
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<arrival> arrivals_;
};

} // namespace bus::test
