#include "bus/concurrency_limit.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bus {

namespace {

// Netflix's step: 1 below a limit of 100, 2 below 1,000, and so on.
double log10_step(double limit) {
  return std::max(1.0, std::floor(std::log10(std::max(1.0, limit))));
}

} // namespace

std::string validate(const adaptive_slots& s) {
  std::vector<std::string> bad;
  if (s.min == 0)
    bad.emplace_back("its min must be at least 1");
  if (s.max < s.min)
    bad.emplace_back("its max (" + std::to_string(s.max) + ") is below its min ("
                     + std::to_string(s.min) + ")");
  if (s.initial != 0 && (s.initial < s.min || s.initial > s.max))
    bad.emplace_back("its initial limit " + std::to_string(s.initial) + " is outside ["
                     + std::to_string(s.min) + ", " + std::to_string(s.max) + "]");
  if (!(s.threshold >= 0 && s.threshold <= s.alpha && s.alpha <= s.beta))
    bad.emplace_back("its thresholds must hold 0 <= threshold <= alpha <= beta");
  if (!(s.probe_multiplier > 0))
    bad.emplace_back("its probe_multiplier must be above 0");
  if (!(s.smoothing > 0 && s.smoothing <= 1))
    bad.emplace_back("its smoothing must be in (0, 1]");
  std::string out;
  for (const auto& b : bad)
    out += (out.empty() ? "" : "; ") + b;
  return out;
}

vegas_limit::vegas_limit(const adaptive_slots& settings)
    : settings_(settings),
      limit_(static_cast<double>(settings.initial != 0 ? settings.initial : settings.min)) {}

std::size_t vegas_limit::limit() const noexcept {
  return probing_ ? settings_.min : static_cast<std::size_t>(limit_);
}

std::size_t vegas_limit::on_sample(std::chrono::nanoseconds latency, std::size_t in_flight,
                                   bool failed) {
  latency = std::max(latency, std::chrono::nanoseconds(1));
  // Probing: the endpoint drains to the least limit, and the first delivery
  // that began there measures the latency with nothing queued. What began
  // before says nothing about it.
  if (probing_) {
    if (in_flight > settings_.min)
      return limit();
    probing_ = false;
    since_probe_ = 0;
    no_load_ = latency;
    return limit();
  }
  if (no_load_.count() == 0 || latency < no_load_) {
    no_load_ = latency;
    return limit();
  }
  if (++since_probe_ > settings_.probe_multiplier * limit_) {
    probing_ = true;
    return limit();
  }
  const auto step = log10_step(limit_);
  if (failed) {
    update(limit_ - step);
    return limit();
  }
  // Fewer in flight than half the limit: the limit is not what holds the
  // endpoint back, so a short latency says nothing about a higher one.
  if (static_cast<double>(in_flight) * 2 < limit_)
    return limit();
  const double ratio = static_cast<double>(no_load_.count()) / static_cast<double>(latency.count());
  const double waiting = std::ceil(limit_ * (1 - ratio));
  // Growing takes a delivery that began with the limit full: one that began
  // below it (as an endpoint fills up again after a probe) saw less queueing
  // than the limit would cause. Netflix grows from any; here that
  // overshot by half after every probe.
  const bool full = static_cast<double>(in_flight) >= std::floor(limit_);
  if (waiting <= settings_.threshold * step && full)
    update(limit_ + settings_.beta * step);
  else if (waiting < settings_.alpha * step && full)
    update(limit_ + step);
  else if (waiting > settings_.beta * step)
    update(limit_ - step);
  return limit();
}

void vegas_limit::update(double target) {
  target =
      std::clamp(target, static_cast<double>(settings_.min), static_cast<double>(settings_.max));
  limit_ = (1 - settings_.smoothing) * limit_ + settings_.smoothing * target;
}

} // namespace bus
