// The progress line: once a second, to standard error, on its own thread,
// until stopped. It reads the ledger and the bus's counters, both safe to
// read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "bus/bus.hpp"
#include "topology.hpp"

namespace stress {

// What the producer has sent so far; written by it, read by the progress line.
struct traffic {
  std::atomic<std::uint64_t> messages{0};   // sends and publishes
  std::atomic<std::uint64_t> deliveries{0}; // a publish is one per endpoint
  std::uint64_t planned = 0;                // messages in all; 0: until a duration ends
};

class progress_line {
public:
  progress_line(const run_context& run, const bus::message_bus& bus, const traffic& sent);
  ~progress_line(); // stops
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

  void stop();

private:
  void print(std::chrono::steady_clock::duration elapsed) const;

  const run_context& run_;
  const bus::message_bus& bus_;
  const traffic& sent_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace stress
