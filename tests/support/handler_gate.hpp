// A gate that handlers on real threads wait at until the test opens it, so
// a test can hold handlers inside their call for as long as it needs
// (blocked, like a handler waiting on a database) and knows how many are
// inside. Every wait has a deadline: a test that goes wrong fails, it
// does not hang.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace bus::test {

class handler_gate {
public:
  // Called by a handler: counts it as inside, then blocks until open().
  // Returns false if the gate was not opened within the deadline.
  bool pass() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++inside_;
    changed_.notify_all();
    auto opened = changed_.wait_for(lock, std::chrono::seconds(30), [&] { return open_; });
    --inside_;
    ++passed_;
    changed_.notify_all();
    return opened;
  }

  void open() {
    std::lock_guard<std::mutex> guard(mutex_);
    open_ = true;
    changed_.notify_all();
  }

  // Waits until `n` handlers are inside at once, or a deadline passes.
  bool wait_inside(int n, std::chrono::seconds deadline = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return inside_ >= n; });
  }

  // Waits until `n` handlers have passed, or a deadline passes.
  bool wait_passed(int n, std::chrono::seconds deadline = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return passed_ >= n; });
  }

  int inside() {
    std::lock_guard<std::mutex> guard(mutex_);
    return inside_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int inside_ = 0;
  int passed_ = 0;
};

} // namespace bus::test
