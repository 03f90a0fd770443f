// The pure core of automatic rate limiting (NServiceBus's): count
// consecutive failed attempts; at the threshold the endpoint goes to one
// message at a time with a wait between attempts, and the first success
// brings it back. Every failed attempt counts, immediate retries included:
// during an outage they fail like any other attempt.
#pragma once

#include "bus/time.hpp"

namespace bus {

struct rate_limit_settings {
  int consecutive_failures = 0;        // the threshold; 0 turns rate limiting off
  duration wait_between_attempts{std::chrono::seconds(5)};
};

class rate_limiter {
public:
  enum class transition { none, started, ended };

  explicit rate_limiter(rate_limit_settings settings) : settings_(settings) {}

  // A failed attempt. Returns started when it reaches the threshold.
  transition record_failure() noexcept {
    ++streak_;
    if (!limited_ && settings_.consecutive_failures > 0 && streak_ >= settings_.consecutive_failures) {
      limited_ = true;
      return transition::started;
    }
    return transition::none;
  }

  // A successful attempt: the streak ends. Returns ended if it was limited.
  transition record_success() noexcept {
    streak_ = 0;
    if (!limited_)
      return transition::none;
    limited_ = false;
    return transition::ended;
  }

  [[nodiscard]] bool limited() const noexcept { return limited_; }
  [[nodiscard]] int streak() const noexcept { return streak_; }
  [[nodiscard]] const rate_limit_settings& settings() const noexcept { return settings_; }

private:
  rate_limit_settings settings_;
  int streak_ = 0;
  bool limited_ = false;
};

} // namespace bus
