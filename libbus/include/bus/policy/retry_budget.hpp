// The retry budget (Finagle's RetryBudget, Envoy's retry budget): retries,
// immediate and redeliveries alike, may not exceed a ratio of first
// attempts over a sliding window, plus a floor of retries per second, so a
// failing dependency does not turn every message into (n + 1) attempts at
// once. Pure and deterministic: every call takes the time, nothing reads a
// clock. Thread-safe: one budget may be shared by every consumer of an
// endpoint, or by name by several endpoints, each on its own thread.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bus/policy/action.hpp"
#include "bus/policy/random.hpp"
#include "bus/time.hpp"

namespace bus {

struct recoverability_config;
struct error_context;

// What a failing message does when the budget refuses its retry. It never
// vanishes: each ends in an action of the policy.
enum class budget_fallback : std::uint8_t {
  terminal,      // its rule's terminal action (the error queue unless discard), at once
  next_tier,     // a refused immediate retry becomes the rule's next redelivery (not charged);
                 // a refused redelivery, the terminal action
  longest_delay, // a redelivery at the longest delay of the rule's redelivery tier (not
                 // charged); the terminal action if the rule has none left
};

[[nodiscard]] std::string_view to_string(budget_fallback f) noexcept;
// "terminal", "next_tier", "longest_delay"; false for anything else.
[[nodiscard]] bool parse_budget_fallback(std::string_view text, budget_fallback& out) noexcept;

// Finagle's defaults: 20% of first attempts over 10 s, at least 10
// retries per second.
struct retry_budget_settings {
  double ratio = 0.2;                              // retries per first attempt, in [0, 1000]
  duration window = std::chrono::seconds(10);      // the sliding window, at least 1 s
  int min_retries_per_second = 10;                 // the floor, >= 0
  budget_fallback fallback = budget_fallback::terminal;
  // Empty: the endpoint's own budget. A name: one budget shared by every
  // endpoint that names it (all must give the same settings).
  std::string name;
};

[[nodiscard]] bool operator==(const retry_budget_settings& a, const retry_budget_settings& b) noexcept;

// Every mistake in `s`, each naming the field: "retry budget ratio -1 is
// negative", ... Empty when valid.
[[nodiscard]] std::vector<std::string> mistakes(const retry_budget_settings& s);

// One line for people: "retry budget 'orders': 20% of first attempts over
// 00:00:10 plus 10 retries/s; when spent: terminal".
[[nodiscard]] std::string describe(const retry_budget_settings& s);

// The window arithmetic. Tokens are counted in millionths: a first attempt
// deposits ratio * 10^6, a retry costs 10^6, and the floor is a reserve of
// min_retries_per_second * window seconds that never expires. Deposits and
// withdrawals live in `slices` time slices of window / slices each and
// expire together with their slice, so at every moment, over the slices
// alive (the last window, to one slice), retries <= ratio * first attempts
// + the reserve. Slices count from the budget's first use, so over the
// first k windows of its life retries <= ratio * first attempts +
// min_retries_per_second * k * window, the figure Finagle quotes; over any
// other stretch of time T, at most one reserve more than
// min_retries_per_second * T.
// Time that goes backwards (threads reading one clock) counts as the
// latest time seen.
class retry_budget {
public:
  static constexpr int slices = 10;

  explicit retry_budget(retry_budget_settings settings);
  retry_budget(const retry_budget&) = delete;
  retry_budget& operator=(const retry_budget&) = delete;

  // A message's first attempt (a fresh delivery, not a redelivery).
  void record_first_attempt(time_point now);
  // True, and the retry is charged, if the budget allows one more retry now.
  [[nodiscard]] bool try_spend_retry(time_point now);
  // Whole retries the budget would allow now.
  [[nodiscard]] std::int64_t available(time_point now);

  [[nodiscard]] const retry_budget_settings& settings() const noexcept { return settings_; }

private:
  struct slice {
    std::int64_t index = 0;
    std::int64_t tokens = 0; // millionths
  };
  std::int64_t advance(time_point now);      // the current slice's index; mutex held
  std::int64_t balance(std::int64_t current) const; // mutex held

  retry_budget_settings settings_;
  std::int64_t deposit_;   // millionths per first attempt
  std::int64_t reserve_;   // millionths
  std::int64_t slice_ms_;
  std::mutex mutex_;
  std::int64_t latest_;    // highest slice index seen
  std::int64_t epoch_ms_ = 0; // the first use: slice 0 starts there
  bool started_ = false;
  std::array<slice, slices> ring_{};
};

// Whether `a` is a retry the budget pays for (immediate or delayed).
[[nodiscard]] bool is_retry(const action& a) noexcept;

// What a failing message does instead of `refused` (a retry the budget
// refused), by `config.options.retry_budget`'s fallback: see
// budget_fallback. The reason of a terminal action says the budget was
// spent and what it refused. A fallback redelivery respects the message's
// expiry and the retry time limit as decide() does (terminal instead).
// Draws from `rng` only for jittered redelivery delays.
[[nodiscard]] action when_budget_spent(const recoverability_config& config,
                                       const error_context& context, const action& refused,
                                       random_source rng);

} // namespace bus
