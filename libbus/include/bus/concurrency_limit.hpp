// Adaptive slots: an endpoint's limit on handlers at once, adjusted from
// how long its deliveries take, so that a dependency that slows down gets
// less load from the bus instead of more (issue 23).
//
// The algorithm is TCP Vegas as Netflix's concurrency-limits applies it to
// requests (VegasLimit). The least latency seen stands for the latency with
// nothing queued beneath the handler; a delivery that takes longer, at a
// limit L, means about L * (1 - least / latency) deliveries wait somewhere
// (a connection pool, the database's own queue). Few wait: the limit grows;
// many wait: it shrinks; in between it holds. Its fixed point sits a few
// deliveries above what the dependency serves without queueing.
//
// Pure: the caller measures each delivery and says how many were in flight
// when it began. Nothing here reads a clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace bus {

// What slots(adaptive_slots{...}) asks for. The thresholds are in
// deliveries waiting, each a multiple of max(1, floor(log10(limit))) as in
// Netflix's VegasLimit, so that they grow slowly with the limit. Their
// defaults are Linux's TCP Vegas's (alpha 2, beta 4), not Netflix's (3, 6,
// threshold 1): the limit settles alpha to beta above the dependency's
// capacity, and waiting is rounded up, so a threshold of 1 jumped by beta
// at the capacity itself (README, "Slots that adapt to a dependency").
struct adaptive_slots {
  std::size_t min = 1;     // the limit never goes below
  std::size_t max = 64;    // nor above; the endpoint's consumers (and prefetch)
  std::size_t initial = 0; // where it starts; 0: min
  double alpha = 2;        // fewer waiting than this: grow by one log10 step
  double beta = 4;         // more waiting than this: shrink by one
  // At most this many waiting: grow by beta at once (an idle dependency).
  double threshold = 0;
  // Every probe_multiplier * limit samples the limit drops to min until a
  // delivery that began there has ended, and its latency is the least
  // latency from then on: a dependency that became slower for good is not
  // measured against its past for ever. (Netflix takes any one sample; at
  // a saturated endpoint that sample is queued too, and the limit climbs.
  // Draining to measure is TCP BBR's ProbeRTT.)
  double probe_multiplier = 100;
  // How much of each step is taken: 1 takes it whole; below 1 the limit
  // moves towards its target more smoothly.
  double smoothing = 1;
};

// The settings' mistakes, one sentence each joined by "; ", or empty.
[[nodiscard]] std::string validate(const adaptive_slots& settings);

class vegas_limit {
public:
  explicit vegas_limit(const adaptive_slots& settings);

  // One delivery's latency (from its dispatch to its end), how many were in
  // flight when it was dispatched (itself included), and whether it failed
  // (a failed delivery shrinks the limit as a request the dependency
  // dropped does). Returns the limit now.
  std::size_t on_sample(std::chrono::nanoseconds latency, std::size_t in_flight, bool failed);

  // What the endpoint may run at once now: the estimate, or min while a
  // probe drains the endpoint.
  [[nodiscard]] std::size_t limit() const noexcept;
  // The limit the algorithm estimates, probe or not: what an operator sees.
  [[nodiscard]] std::size_t estimate() const noexcept { return static_cast<std::size_t>(limit_); }
  [[nodiscard]] bool probing() const noexcept { return probing_; }
  // The least latency it measures against (zero before the first sample).
  [[nodiscard]] std::chrono::nanoseconds no_load_latency() const noexcept { return no_load_; }

private:
  void update(double target);

  adaptive_slots settings_;
  double limit_;
  std::chrono::nanoseconds no_load_{0};
  std::uint64_t since_probe_ = 0;
  bool probing_ = false;
};

} // namespace bus
