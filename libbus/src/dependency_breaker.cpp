// The dependency breaker's state machine (see the header): a consecutive
// count and a rolling window of ten buckets, as Hystrix keeps its health
// counts, so that recording an outcome costs a few additions whatever the
// traffic.
#include "bus/dependency_breaker.hpp"

#include <algorithm>

namespace bus {

std::string_view to_string(breaker_state state) noexcept {
  switch (state) {
    case breaker_state::closed: return "closed";
    case breaker_state::open: return "open";
    case breaker_state::half_open: return "half-open";
  }
  return "unknown";
}

dependency_breaker::dependency_breaker(dependency_breaker_settings settings) noexcept
  : settings_(settings) {}

breaker_state dependency_breaker::state(time_point now) const noexcept {
  if (state_ == breaker_state::open && now >= open_until_)
    return breaker_state::half_open;
  return state_;
}

dependency_breaker::transition dependency_breaker::advance(time_point now) noexcept {
  if (state_ != breaker_state::open || now < open_until_)
    return transition::none;
  state_ = breaker_state::half_open;
  probe_out_ = false;
  return transition::half_opened;
}

bool dependency_breaker::try_probe(time_point now) noexcept {
  advance(now);
  if (state_ != breaker_state::half_open || probe_out_)
    return false;
  probe_out_ = true;
  return true;
}

dependency_breaker::transition dependency_breaker::record_success(time_point now,
                                                                  bool probe) noexcept {
  switch (state_) {
    case breaker_state::closed: {
      streak_ = 0;
      ++current_bucket(now).calls;
      return transition::none;
    }
    case breaker_state::half_open:
      if (!probe)
        return transition::none;
      state_ = breaker_state::closed;
      probe_out_ = false;
      streak_ = 0;
      clear_window(); // the outage's failures must not reopen it at once
      return transition::closed;
    case breaker_state::open: return transition::none;
  }
  return transition::none;
}

dependency_breaker::transition dependency_breaker::record_failure(time_point now,
                                                                  bool probe) noexcept {
  switch (state_) {
    case breaker_state::closed: {
      ++streak_;
      auto& b = current_bucket(now);
      ++b.calls;
      ++b.failures;
      if (settings_.consecutive_failures > 0 && streak_ >= settings_.consecutive_failures)
        return open(now);
      if (settings_.failure_rate > 0) {
        auto n = calls(now);
        if (n >= std::max(settings_.minimum_calls, 1)
            && failures(now) >= settings_.failure_rate * n)
          return open(now);
      }
      return transition::none;
    }
    case breaker_state::half_open:
      if (!probe)
        return transition::none;
      return open(now);
    case breaker_state::open: return transition::none;
  }
  return transition::none;
}

int dependency_breaker::calls(time_point now) const noexcept {
  auto first = slice_of(now) - buckets + 1;
  int n = 0;
  for (const auto& b : window_)
    if (b.index >= first)
      n += b.calls;
  return n;
}

int dependency_breaker::failures(time_point now) const noexcept {
  auto first = slice_of(now) - buckets + 1;
  int n = 0;
  for (const auto& b : window_)
    if (b.index >= first)
      n += b.failures;
  return n;
}

std::int64_t dependency_breaker::slice_of(time_point now) const noexcept {
  auto slice = std::max<std::int64_t>(settings_.window.count() / buckets, 1);
  auto ms = std::chrono::duration_cast<duration>(now.time_since_epoch()).count();
  return ms / slice;
}

dependency_breaker::bucket& dependency_breaker::current_bucket(time_point now) noexcept {
  auto index = slice_of(now);
  auto& b = window_[static_cast<std::size_t>(((index % buckets) + buckets) % buckets)];
  if (b.index != index)
    b = bucket{index, 0, 0};
  return b;
}

dependency_breaker::transition dependency_breaker::open(time_point now) noexcept {
  state_ = breaker_state::open;
  probe_out_ = false;
  open_until_ = now + settings_.open_wait;
  ++opened_;
  return transition::opened;
}

void dependency_breaker::clear_window() noexcept {
  window_.fill(bucket{});
}

} // namespace bus
