#include "bus/policy/schedule.hpp"

#include <algorithm>
#include <utility>

namespace bus {

namespace {

using delay_kinds = std::variant<backoff_delays, interval_delays, exception_delays>;

retry_schedule with_defaults(delay_kinds delays, bool jitter, duration max_delay) {
  // A server's "retry after" is a fact, not an estimate to spread around.
  const bool from_exception = std::holds_alternative<exception_delays>(delays);
  return retry_schedule{std::move(delays), jitter && !from_exception, max_delay};
}

duration clamp(duration d, duration max_delay) {
  return std::clamp(d, duration::zero(), std::max(max_delay, duration::zero()));
}

} // namespace

retry_schedule make_retry_schedule(delay_kinds delays) {
  return with_defaults(std::move(delays), retry_defaults::jitter, retry_defaults::max_delay);
}

retry_schedule make_redelivery_schedule(delay_kinds delays) {
  return with_defaults(std::move(delays), redelivery_defaults::jitter,
                       redelivery_defaults::max_delay);
}

retry_schedule default_retry_schedule() {
  return make_retry_schedule(
      backoff_delays{retry_defaults::count, retry_defaults::base_delay, retry_defaults::kind});
}

retry_schedule default_redelivery_schedule() {
  return make_redelivery_schedule(interval_delays{std::vector<duration>(
      redelivery_defaults::intervals.begin(), redelivery_defaults::intervals.end())});
}

int retry_count(const retry_schedule& schedule) noexcept {
  struct count_of {
    int operator()(const backoff_delays& d) const noexcept { return d.count; }
    int operator()(const interval_delays& d) const noexcept {
      return static_cast<int>(std::min<std::size_t>(d.intervals.size(), 1'000'000));
    }
    int operator()(const exception_delays& d) const noexcept { return d.count; }
  };
  return std::max(std::visit(count_of{}, schedule.delays), 0);
}

duration nominal_delay(const retry_schedule& schedule, int attempt,
                       const caught_exception& thrown) {
  const int n = std::max(attempt, 1);
  struct delay_of {
    int n;
    const caught_exception& thrown;
    duration operator()(const backoff_delays& d) const { return backoff_delay(d.kind, d.base, n); }
    duration operator()(const interval_delays& d) const {
      if (d.intervals.empty())
        return duration::zero();
      return d
          .intervals[std::min<std::size_t>(static_cast<std::size_t>(n), d.intervals.size()) - 1];
    }
    duration operator()(const exception_delays& d) const {
      return d.compute ? d.compute(thrown, n) : duration::zero();
    }
  };
  return clamp(std::visit(delay_of{n, thrown}, schedule.delays), schedule.max_delay);
}

duration nominal_delay(const retry_schedule& schedule, int attempt,
                       const std::exception_ptr& exception) {
  return nominal_delay(schedule, attempt, caught_exception(exception));
}

duration planned_delay(const retry_schedule& schedule, int attempt,
                       const caught_exception& thrown, random_source rng) {
  const duration nominal = nominal_delay(schedule, attempt, thrown);
  if (!schedule.jitter)
    return nominal;
  return clamp(apply_jitter(nominal, rng), schedule.max_delay);
}

duration planned_delay(const retry_schedule& schedule, int attempt,
                       const std::exception_ptr& exception, random_source rng) {
  return planned_delay(schedule, attempt, caught_exception(exception), rng);
}

std::string to_short_string(duration d) {
  using namespace std::chrono;
  const auto ms = d.count();
  if (ms == 0)
    return "0ms";
  const auto as = [](auto value, const char* unit) { return std::to_string(value) + unit; };
  if (ms % 3'600'000 == 0)
    return as(ms / 3'600'000, "h");
  if (ms % 60'000 == 0)
    return as(ms / 60'000, "min");
  if (ms % 1'000 == 0)
    return as(ms / 1'000, "s");
  return as(ms, "ms");
}

} // namespace bus
