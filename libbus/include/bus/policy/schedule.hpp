// A retry schedule: how many retries one tier makes (immediate retries, or
// redeliveries) and the delay before each. The DSL builds schedules with
// Mocha's defaults; decide() reads them.
#pragma once

#include <array>
#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "bus/caught_exception.hpp"
#include "bus/policy/backoff.hpp"
#include "bus/policy/random.hpp"
#include "bus/time.hpp"

namespace bus {

// `count` retries, delays from a backoff formula starting at `base`.
struct backoff_delays {
  int count = 0;
  duration base{};
  backoff kind = backoff::exponential;
};

// One explicit delay per retry: the number of intervals is the number of
// retries (Mocha's Retry([...]), MassTransit's Intervals).
struct interval_delays {
  std::vector<duration> intervals;
};

// `count` retries, each delay read from the exception, e.g. an HTTP 429's
// Retry-After. `compute` is called with the exception that matched the rule
// and the 1-based attempt number; what it throws, decide() turns into a move
// to the error queue with the reason recorded.
struct exception_delays {
  int count = 0;
  std::function<duration(const caught_exception&, int attempt)> compute;
};

struct retry_schedule {
  std::variant<backoff_delays, interval_delays, exception_delays> delays;
  bool jitter = true;
  // A hard ceiling: no delay of this schedule exceeds it, jittered or not.
  duration max_delay{};
};

// The longest delay the bus schedules, for any tier: 365 days. validate()
// refuses a rule whose base delay, interval or max delay is longer, and
// decide() clamps a longer delay (from a custom policy, or rules that were
// never validated) to it and says so in the action (clamped_from). With the
// times a message may carry (up to the year 2200, see time.hpp) a due time
// `now + delay` stays far from the end of system_clock's range (2262).
inline constexpr duration max_scheduled_delay = std::chrono::hours(24 * 365);

// Mocha's retry defaults: Retry() means 3 retries, 200 ms, exponential,
// jitter, at most 30 s.
struct retry_defaults {
  static constexpr int count = 3;
  static constexpr duration base_delay{200};
  static constexpr backoff kind = backoff::exponential;
  static constexpr bool jitter = true;
  static constexpr duration max_delay = std::chrono::seconds(30);
};

// Mocha's redelivery defaults: Redeliver() means 5, 15 and 30 minutes,
// jitter, at most 1 hour. Redeliver(n, base) uses the same backoff as
// Retry(), exponential, so one default holds everywhere; NServiceBus's
// "base * (n + 1)" is redeliver(n, base, backoff::linear).
struct redelivery_defaults {
  static constexpr std::array<duration, 3> intervals{
      std::chrono::minutes(5), std::chrono::minutes(15), std::chrono::minutes(30)};
  static constexpr backoff kind = backoff::exponential;
  static constexpr bool jitter = true;
  static constexpr duration max_delay = std::chrono::hours(1);
};

// Schedules for each tier with that tier's defaults filled in: jitter on and
// the tier's maximum delay, except for delays read from the exception, which
// are taken as given (a server that says "retry after 30 s" means 30 s), so
// their jitter is off.
[[nodiscard]] retry_schedule
make_retry_schedule(std::variant<backoff_delays, interval_delays, exception_delays> delays);
[[nodiscard]] retry_schedule
make_redelivery_schedule(std::variant<backoff_delays, interval_delays, exception_delays> delays);

// Retry() and Redeliver() without arguments.
[[nodiscard]] retry_schedule default_retry_schedule();
[[nodiscard]] retry_schedule default_redelivery_schedule();

// How many retries `schedule` allows; a negative count counts as zero.
[[nodiscard]] int retry_count(const retry_schedule& schedule) noexcept;

// The delay before retry `attempt` (1-based) without jitter: the formula,
// the interval or the exception's value, capped at max_delay and never
// negative. An attempt beyond the last interval takes the last one. Calls a
// user's delay function for exception_delays and lets what it throws pass.
[[nodiscard]] duration nominal_delay(const retry_schedule& schedule, int attempt,
                                     const caught_exception& thrown);
// The same, looking into `exception` first (one rethrow).
[[nodiscard]] duration nominal_delay(const retry_schedule& schedule, int attempt,
                                     const std::exception_ptr& exception);

// The delay decide() uses: nominal_delay(), jittered when the schedule says
// so (one draw from `rng`), capped at max_delay again. Without jitter no
// draw is made. Lets a user's delay function's exception pass.
[[nodiscard]] duration planned_delay(const retry_schedule& schedule, int attempt,
                                     const caught_exception& thrown, random_source rng);
// The same, looking into `exception` first (one rethrow).
[[nodiscard]] duration planned_delay(const retry_schedule& schedule, int attempt,
                                     const std::exception_ptr& exception, random_source rng);

// A duration as a user would write it: "200ms", "30s", "5min", "1h";
// mixed units fall back to the largest exact one ("1500ms", "90s").
[[nodiscard]] std::string to_short_string(duration d);

} // namespace bus
