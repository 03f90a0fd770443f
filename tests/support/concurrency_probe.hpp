// Counts handlers running at once, for tests on real threads that prove an
// endpoint reaches its concurrency limit and never passes it.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace bus::test {

// Counts handlers running at once. Each handler waits, on a condition and
// with a deadline, until `target` run together, so the test proves the
// endpoint reaches its limit; once reached, handlers pass straight through.
class concurrency_probe {
public:
  explicit concurrency_probe(int target) : target_(target) {}

  void enter_and_leave() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++running_;
    most_ = std::max(most_, running_);
    if (running_ >= target_)
      reached_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return reached_; });
    --running_;
    ++completed_;
    changed_.notify_all();
  }

  // Waits until `n` handlers have completed, or a deadline passes.
  bool wait_completed(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return completed_ >= n; });
  }

  int most() {
    std::lock_guard<std::mutex> guard(mutex_);
    return most_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int target_;
  int running_ = 0;
  int most_ = 0;
  int completed_ = 0;
  bool reached_ = false;
};


} // namespace bus::test
