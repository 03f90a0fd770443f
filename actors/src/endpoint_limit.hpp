// How many deliveries an endpoint may have at its consumers at once: its
// slots, or with adaptive slots the limit bus::vegas_limit estimates from
// each delivery's latency; and when a change of that limit is worth a log
// line (on change, at most one a minute, so that a limit that moves by one
// now and then does not fill the log).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "bus/concurrency_limit.hpp"
#include "bus/time.hpp"

namespace bus::detail {

class endpoint_limit {
public:
  static constexpr auto log_interval = std::chrono::minutes(1);

  endpoint_limit(std::size_t slots, const std::optional<adaptive_slots>& adaptive) : slots_(slots) {
    if (adaptive)
      adaptive_.emplace(*adaptive);
    logged_ = shown();
  }

  [[nodiscard]] bool adaptive() const noexcept { return adaptive_.has_value(); }
  // What dispatch may have in flight now (a probe drains to the least).
  [[nodiscard]] std::size_t allowed() const noexcept {
    return adaptive_ ? adaptive_->limit() : slots_;
  }
  // What stats, metrics and the page show: the estimate.
  [[nodiscard]] std::size_t shown() const noexcept {
    return adaptive_ ? adaptive_->estimate() : slots_;
  }

  // A delivery dispatched with `in_flight` at the consumers (itself
  // included) ended after `latency`; `failed` unless it was handled.
  // Returns the limit to log, if a line is due.
  std::optional<std::size_t> ended(std::chrono::nanoseconds latency, std::size_t in_flight,
                                   bool failed, time_point now) {
    if (!adaptive_)
      return std::nullopt;
    adaptive_->on_sample(latency, in_flight, failed);
    auto limit = shown();
    if (limit == logged_ || (logged_at_ && now - *logged_at_ < log_interval))
      return std::nullopt;
    logged_ = limit;
    logged_at_ = now;
    return limit;
  }

private:
  std::size_t slots_;
  std::optional<vegas_limit> adaptive_;
  std::size_t logged_ = 0;
  std::optional<time_point> logged_at_;
};

} // namespace bus::detail
