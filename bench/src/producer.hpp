// The producers of the in-memory cases: the main thread sending pings,
// closed loop (as fast as the handlers allow) or open loop (at a rate).
#pragma once

#include <thread>

#include "measure.hpp"
#include "workload.hpp"

namespace bench {

// Sends `messages` pings through `send`, at most `window` unfinished.
// Returns whether all were handled before the deadline.
template <class Send>
bool send_closed_loop(Send& send, completion& done, std::uint64_t messages, std::uint64_t window,
                      steady::time_point deadline) {
  for (std::uint64_t i = 0; i < messages; ++i) {
    if (i >= done.done() + window && !done.wait_for(i - window / 2, deadline))
      return false;
    send(ping{i, now_ns()});
  }
  return done.wait_for(messages, deadline);
}

// Sends `messages` pings through `send` at `rate` per second.
template <class Send>
bool send_open_loop(Send& send, completion& done, std::uint64_t messages, double rate,
                    steady::time_point deadline) {
  fine_timer_slack();
  auto interval_ns = 1e9 / rate;
  auto start = now_ns();
  for (std::uint64_t i = 0; i < messages; ++i) {
    auto due = start + static_cast<std::int64_t>(static_cast<double>(i) * interval_ns);
    if (auto ahead = due - now_ns(); ahead > 0)
      std::this_thread::sleep_for(std::chrono::nanoseconds(ahead));
    send(ping{i, now_ns()});
  }
  return done.wait_for(messages, deadline);
}

} // namespace bench
