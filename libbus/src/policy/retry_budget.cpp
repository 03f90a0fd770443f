// The retry budget's window arithmetic and its fallback: see
// bus/policy/retry_budget.hpp.
#include "bus/policy/retry_budget.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "bus/policy/config.hpp"
#include "bus/policy/deadline.hpp"
#include "bus/policy/decide.hpp"
#include "bus/policy/error_context.hpp"

namespace bus {

namespace {

constexpr std::int64_t unit = 1'000'000; // millionths of a retry

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  auto q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::string percent(double ratio) {
  std::ostringstream out;
  out << ratio * 100 << "%";
  return out.str();
}

} // namespace

std::string_view to_string(budget_fallback f) noexcept {
  switch (f) {
    case budget_fallback::terminal: return "terminal";
    case budget_fallback::next_tier: return "next_tier";
    case budget_fallback::longest_delay: return "longest_delay";
  }
  return "terminal";
}

bool parse_budget_fallback(std::string_view text, budget_fallback& out) noexcept {
  for (auto f : {budget_fallback::terminal, budget_fallback::next_tier,
                 budget_fallback::longest_delay})
    if (text == to_string(f)) {
      out = f;
      return true;
    }
  return false;
}

bool operator==(const retry_budget_settings& a, const retry_budget_settings& b) noexcept {
  return a.ratio == b.ratio && a.window == b.window
         && a.min_retries_per_second == b.min_retries_per_second && a.fallback == b.fallback
         && a.name == b.name;
}

std::vector<std::string> mistakes(const retry_budget_settings& s) {
  std::vector<std::string> out;
  const std::string who = s.name.empty() ? "retry budget" : "retry budget '" + s.name + "'";
  if (!(s.ratio >= 0 && s.ratio <= 1000))
    out.push_back(who + ": ratio " + percent(s.ratio) + " is not between 0% and 100000%");
  if (s.window < std::chrono::seconds(1) || s.window > std::chrono::hours(24))
    out.push_back(who + ": window " + to_hms(s.window) + " is not between 1 s and 24 h");
  if (s.min_retries_per_second < 0 || s.min_retries_per_second > 1'000'000)
    out.push_back(who + ": min_retries_per_second "
                  + std::to_string(s.min_retries_per_second) + " is not between 0 and 1000000");
  return out;
}

std::string describe(const retry_budget_settings& s) {
  return (s.name.empty() ? std::string("retry budget of the endpoint")
                         : "retry budget '" + s.name + "'")
         + ": " + percent(s.ratio) + " of first attempts over " + to_hms(s.window) + " plus "
         + std::to_string(s.min_retries_per_second) + " retries/s; when spent: "
         + std::string(to_string(s.fallback));
}

retry_budget::retry_budget(retry_budget_settings settings)
  : settings_(std::move(settings)),
    deposit_(static_cast<std::int64_t>(std::llround(std::clamp(settings_.ratio, 0.0, 1000.0) * unit))),
    reserve_(static_cast<std::int64_t>(std::max(settings_.min_retries_per_second, 0))
             * std::max<std::int64_t>(settings_.window.count(), 1) * (unit / 1000)),
    slice_ms_(std::max<std::int64_t>(settings_.window.count() / slices, 1)), latest_(0) {}

std::int64_t retry_budget::advance(time_point now) {
  const auto ms = std::chrono::duration_cast<duration>(now.time_since_epoch()).count();
  if (!started_) {
    epoch_ms_ = ms; // slices count from the first use
    started_ = true;
  }
  const auto index = floor_div(ms - epoch_ms_, slice_ms_);
  if (index > latest_)
    latest_ = index;
  auto& s = ring_[static_cast<std::size_t>(((latest_ % slices) + slices) % slices)];
  if (s.index != latest_) {
    s.index = latest_; // an expired slice is reused
    s.tokens = 0;
  }
  return latest_;
}

std::int64_t retry_budget::balance(std::int64_t current) const {
  std::int64_t sum = reserve_;
  for (const auto& s : ring_)
    if (s.index > current - slices && s.index <= current)
      sum += s.tokens;
  return sum;
}

void retry_budget::record_first_attempt(time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto current = advance(now);
  ring_[static_cast<std::size_t>(((current % slices) + slices) % slices)].tokens += deposit_;
}

bool retry_budget::try_spend_retry(time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto current = advance(now);
  if (balance(current) < unit)
    return false;
  ring_[static_cast<std::size_t>(((current % slices) + slices) % slices)].tokens -= unit;
  return true;
}

std::int64_t retry_budget::available(time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::max<std::int64_t>(balance(advance(now)) / unit, 0);
}

bool is_retry(const action& a) noexcept {
  return std::holds_alternative<immediate_retry>(a) || std::holds_alternative<delayed_retry>(a);
}

action when_budget_spent(const recoverability_config& config, const error_context& context,
                         const action& refused, random_source rng) {
  const auto fallback = config.options.retry_budget ? config.options.retry_budget->fallback
                                                    : budget_fallback::terminal;
  const std::string spent = "retry budget spent: " + describe(refused) + " refused";
  std::optional<caught_exception> local;
  const caught_exception& thrown =
      context.caught != nullptr && context.caught->pointer() == context.exception
          ? *context.caught
          : local.emplace(context.exception);
  const auto match = config.rules.match(thrown);
  const rule* r = match.rule ? &config.rules.rules()[*match.rule] : nullptr;
  auto terminal = [&](std::string reason) -> action {
    if (r && r->terminal == terminal_action::discard)
      return discard{std::move(reason)};
    return move_to_error{std::move(reason), config.options.error_queue};
  };
  const bool can_redeliver =
      r && r->redelivery && config.options.available.delayed_delivery;
  const auto limit = r && r->max_time ? *r->max_time : config.options.max_retry_time;
  auto in_time = [&](duration delay) -> action {
    auto later = apply_capabilities(delayed_retry{delay, {}}, config);
    if (auto* d = std::get_if<delayed_retry>(&later))
      if (auto why = too_late(context, limit, d->delay))
        return terminal(spent + "; " + *why);
    return later;
  };
  try {
    switch (fallback) {
      case budget_fallback::terminal: break;
      case budget_fallback::next_tier: {
        if (!std::holds_alternative<immediate_retry>(refused) || !can_redeliver)
          break;
        const int redeliveries = retry_count(*r->redelivery);
        if (static_cast<std::int64_t>(context.delivery_count) >= redeliveries)
          break;
        return in_time(planned_delay(*r->redelivery, static_cast<int>(context.delivery_count) + 1,
                                     thrown, rng));
      }
      case budget_fallback::longest_delay: {
        if (!can_redeliver)
          break;
        const int redeliveries = retry_count(*r->redelivery);
        if (redeliveries < 1 || static_cast<std::int64_t>(context.delivery_count) >= redeliveries)
          break;
        duration longest{};
        for (int n = 1; n <= redeliveries; ++n)
          longest = std::max(longest, planned_delay(*r->redelivery, n, thrown, rng));
        return in_time(longest);
      }
    }
  } catch (const std::exception& e) {
    return move_to_error{spent + "; its delay function threw: " + e.what(),
                         config.options.error_queue};
  } catch (...) {
    return move_to_error{spent + "; its delay function threw", config.options.error_queue};
  }
  return terminal(spent);
}

} // namespace bus
