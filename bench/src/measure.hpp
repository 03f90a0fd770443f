// What every benchmark case measures with: a monotonic clock in
// nanoseconds, the heap and the process's memory, a completion counter a
// producer can wait on, and percentiles.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace bench {

using steady = std::chrono::steady_clock;

[[nodiscard]] inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count();
}

[[nodiscard]] inline double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

// Bytes malloc has handed out and not had back (mallinfo2: in-use chunks
// plus mmapped ones). It sees every thread's allocations only when all
// share one arena: call single_arena() first, before any thread starts.
[[nodiscard]] std::int64_t heap_in_use();
void single_arena();

// The resident set now and at its peak (getrusage), in KiB.
[[nodiscard]] std::int64_t rss_kb();
[[nodiscard]] std::int64_t peak_rss_kb();

// Lets the pacing of a latency run sleep to the microsecond rather than
// the default 50 us timer slack.
void fine_timer_slack();

// Counts completed messages; a thread may wait until the count reaches a
// value. complete() costs an atomic increment and, only when a waiter's
// value is reached, a notification.
class completion {
public:
  void complete() {
    auto n = done_.fetch_add(1) + 1;
    if (n >= wake_at_.load()) {
      std::lock_guard<std::mutex> guard(mutex_);
      wake_at_.store(std::numeric_limits<std::uint64_t>::max());
      changed_.notify_all();
    }
  }

  [[nodiscard]] std::uint64_t done() const { return done_.load(std::memory_order_relaxed); }

  // Waits until done() >= n, or the deadline; returns whether it got there.
  bool wait_for(std::uint64_t n, steady::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (done_.load() < n) {
      // Published before the count is read again: complete() either sees
      // it, or its increment is seen here (both sequentially consistent).
      wake_at_.store(n);
      if (done_.load() >= n)
        break;
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout)
        return done_.load() >= n;
    }
    return true;
  }

private:
  std::atomic<std::uint64_t> done_{0};
  std::atomic<std::uint64_t> wake_at_{std::numeric_limits<std::uint64_t>::max()};
  std::mutex mutex_;
  std::condition_variable changed_;
};

// The q-quantile (0..1) of `values`, which it sorts.
[[nodiscard]] inline double quantile(std::vector<double>& values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

} // namespace bench
