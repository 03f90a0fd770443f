// The pure core of a dependency breaker: one circuit breaker per
// downstream dependency ("inventory-db"), shared by every endpoint that
// declares it. Closed: attempts run, and failures counted against the
// dependency open it after `consecutive_failures` in a row, or once the
// failure rate over the last `window` reaches `failure_rate` with at least
// `minimum_calls` outcomes in it. Open: nothing runs until `open_wait` has
// passed. Half-open: one probe runs; its success closes the breaker, its
// failure opens it again for another `open_wait`.
//
// No clock, no threads, no locks: every call takes `now`, so tests drive it
// with made-up time points. The runtime wraps it for sharing across threads.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "bus/time.hpp"

namespace bus {

// Defaults: Hystrix's (50% over a 10 s rolling window of 10 buckets, at
// least 20 calls, 5 s before a single probe), plus a consecutive-failure
// threshold of 5, as Polly's classic breaker and the bus's rate limiting
// count (resilience4j counts a failure rate only). docs/policies.md says why.
struct dependency_breaker_settings {
  int consecutive_failures = 5;   // 0: this trigger is off
  double failure_rate = 0.5;      // in (0, 1]; 0: this trigger is off
  duration window{std::chrono::seconds(10)};
  int minimum_calls = 20;         // outcomes in the window before the rate counts
  duration open_wait{std::chrono::seconds(5)};
};

enum class breaker_state : std::uint8_t { closed, open, half_open };

[[nodiscard]] std::string_view to_string(breaker_state state) noexcept;

class dependency_breaker {
public:
  // What a call changed; none when the state stays as it was.
  enum class transition : std::uint8_t { none, opened, half_opened, closed };

  // Buckets of the rolling window (Hystrix's ten).
  static constexpr int buckets = 10;

  explicit dependency_breaker(dependency_breaker_settings settings) noexcept;

  // The state at `now`: an open breaker whose wait is over reads half-open
  // (state() never changes it; advance() does).
  [[nodiscard]] breaker_state state(time_point now) const noexcept;
  // Moves an open breaker whose wait is over to half-open.
  transition advance(time_point now) noexcept;

  // Whether an attempt may run outside a probe: only when closed.
  [[nodiscard]] bool closed() const noexcept { return state_ == breaker_state::closed; }

  // Takes the single probe of a half-open breaker (advancing it first).
  // False when closed, still open, or the probe is out already.
  bool try_probe(time_point now) noexcept;
  // The probe ended without a verdict on the dependency (its handler failed
  // for another reason, or it never ran): another may be taken.
  void release_probe() noexcept { probe_out_ = false; }
  [[nodiscard]] bool probe_out() const noexcept { return probe_out_; }

  // An attempt that needed the dependency succeeded. In half-open only the
  // probe's success counts (it closes the breaker); in open none does.
  transition record_success(time_point now, bool probe) noexcept;
  // An attempt failed with an exception counted against the dependency.
  // Closed: counted, and may open it. Half-open: the probe's failure opens
  // it again. Open: nothing changes (a call in flight when it opened).
  transition record_failure(time_point now, bool probe) noexcept;

  // When an open breaker lets a probe through.
  [[nodiscard]] time_point open_until() const noexcept { return open_until_; }
  [[nodiscard]] int consecutive() const noexcept { return streak_; }
  // Outcomes and failures in the window at `now`.
  [[nodiscard]] int calls(time_point now) const noexcept;
  [[nodiscard]] int failures(time_point now) const noexcept;
  [[nodiscard]] std::uint64_t times_opened() const noexcept { return opened_; }
  [[nodiscard]] const dependency_breaker_settings& settings() const noexcept { return settings_; }

private:
  struct bucket {
    std::int64_t index = -1; // which slice of time it counts; -1: never used
    int calls = 0;
    int failures = 0;
  };

  [[nodiscard]] std::int64_t slice_of(time_point now) const noexcept;
  bucket& current_bucket(time_point now) noexcept;
  transition open(time_point now) noexcept;
  void clear_window() noexcept;

  dependency_breaker_settings settings_;
  breaker_state state_ = breaker_state::closed;
  int streak_ = 0;
  bool probe_out_ = false;
  time_point open_until_{};
  std::uint64_t opened_ = 0;
  std::array<bucket, buckets> window_{};
};

} // namespace bus
