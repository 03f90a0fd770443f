// Records the completions of a transport's asynchronous sends, from
// whatever thread runs them: how often each one was called and with what,
// so that a test can check "exactly once" and wait for a count with a
// deadline (wakes on each completion, never polls).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bus/transport.hpp"

namespace bus::test {

class completion_log {
public:
  // One completion, known by `name` (a message id, say). The log must
  // outlive every completion it made.
  bus::completion make(std::string name) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      calls_[name]; // made, not called yet
    }
    return [this, name = std::move(name)](bus::result<void> r) {
      std::lock_guard<std::mutex> guard(mutex_);
      calls_[name].push_back(std::move(r));
      order_.push_back(name);
      ++total_;
      changed_.notify_all();
    };
  }

  // One completion for messages sent in one call: index i is `names[i]`.
  bus::indexed_completion make_indexed(std::vector<std::string> names) {
    std::vector<bus::completion> each;
    for (auto& name : names)
      each.push_back(make(std::move(name)));
    return [each = std::move(each)](std::size_t i, bus::result<void> r) { each.at(i)(std::move(r)); };
  }

  // Waits until completions were called `n` times in all, or the deadline.
  bool wait_for(std::size_t n, std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, deadline, [&] { return total_ >= n; });
  }

  // Every completion made was called exactly once.
  bool each_exactly_once() const {
    std::lock_guard<std::mutex> guard(mutex_);
    for (const auto& [name, calls] : calls_)
      if (calls.size() != 1)
        return false;
    return true;
  }

  // How many were called exactly once with success / with `code`.
  std::size_t succeeded() const {
    std::lock_guard<std::mutex> guard(mutex_);
    std::size_t n = 0;
    for (const auto& [name, calls] : calls_)
      n += calls.size() == 1 && static_cast<bool>(calls[0]);
    return n;
  }
  std::size_t failed_with(bus::errc code) const {
    std::lock_guard<std::mutex> guard(mutex_);
    std::size_t n = 0;
    for (const auto& [name, calls] : calls_)
      n += calls.size() == 1 && !calls[0] && calls[0].error().code == code;
    return n;
  }

  // The outcome of the completion `name` (its first call); FAILs if it
  // was not called.
  bus::result<void> outcome(const std::string& name) const {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = calls_.find(name);
    if (it == calls_.end() || it->second.empty())
      FAIL("the completion of " << name << " was not called");
    return it->second.front();
  }

  std::size_t total() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return total_;
  }

  // Names in the order their completions ran.
  std::vector<std::string> order() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return order_;
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<bus::result<void>>> calls_;
  std::vector<std::string> order_;
  std::size_t total_ = 0;
};

} // namespace bus::test
