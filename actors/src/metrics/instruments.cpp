// The lock-free duration histogram and the per-endpoint instrument sets
// (see instruments.hpp).
#include "instruments.hpp"

#include <algorithm>

namespace bus::detail::metrics {

namespace {

// The bounds in nanoseconds, so that an observation compares integers.
constexpr std::array<std::int64_t, duration_bounds.size()> bounds_ns() {
  std::array<std::int64_t, duration_bounds.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::int64_t>(duration_bounds[i] * 1e9 + 0.5);
  return out;
}

constexpr auto bound_ns = bounds_ns();

} // namespace

// The calling thread's shard: threads take them in turn as they first
// observe anything.
static std::size_t my_shard() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine =
    next.fetch_add(1, std::memory_order_relaxed) % duration_histogram::shards;
  return mine;
}

void duration_histogram::observe(std::chrono::nanoseconds d) noexcept {
  auto ns = std::max<std::int64_t>(0, d.count());
  // Prometheus buckets are "less than or equal": the first bound >= ns.
  auto it = std::lower_bound(bound_ns.begin(), bound_ns.end(), ns);
  auto index = static_cast<std::size_t>(it - bound_ns.begin());
  auto& s = shards_[my_shard()];
  s.counts[index].fetch_add(1, std::memory_order_relaxed);
  s.sum_ns.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

duration_histogram::snapshot duration_histogram::read() const noexcept {
  snapshot out;
  for (const auto& s : shards_) {
    for (std::size_t i = 0; i < buckets; ++i)
      out.counts[i] += s.counts[i].load(std::memory_order_relaxed);
    out.sum_ns += s.sum_ns.load(std::memory_order_relaxed);
  }
  return out;
}

endpoint_instruments::endpoint_instruments(std::vector<std::string> message_types) {
  by_handler_.reserve(message_types.size());
  for (auto& type : message_types) {
    by_handler_.push_back(std::make_unique<handler_instruments>());
    by_handler_.back()->message_type = std::move(type);
  }
}

} // namespace bus::detail::metrics
