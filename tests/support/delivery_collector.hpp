// Collects deliveries a transport makes, from whatever thread it makes
// them, and lets a test wait for a count with a deadline: the in-memory
// transport delivers before send returns, a broker-backed one later.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "bus/transport.hpp"

namespace bus::test {

// The message ids of `deliveries`, in their order.
inline std::vector<std::string> message_ids(const std::vector<bus::delivery>& deliveries) {
  std::vector<std::string> out;
  for (const auto& d : deliveries)
    out.push_back(d.message->message_id);
  return out;
}

class delivery_collector {
public:
  bus::delivery_handler handler() {
    return [this](bus::delivery d) {
      std::lock_guard<std::mutex> guard(mutex_);
      items_.push_back(std::move(d));
      changed_.notify_all();
    };
  }

  // Waits until at least `n` deliveries arrived or `deadline` passed;
  // returns whether they did. Wakes on each delivery, never polls.
  bool wait_for(std::size_t n, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return items_.size() >= n; });
  }

  std::vector<bus::delivery> items() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return items_;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return items_.size();
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bus::delivery> items_;
};

} // namespace bus::test
