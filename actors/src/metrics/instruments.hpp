// What the hot path records for metrics, without Prometheus: lock-free
// histograms of durations, one set per handler of an endpoint. The
// consumer writes them (from handler threads, any number at once); the
// exporter reads them when it is scraped (exporter.cpp) and hands the
// increase since its last read to prometheus-cpp. So no Prometheus call,
// lock or label lookup happens per message, and with metrics off
// (endpoint_status::instruments null) the consumer pays one null check.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bus::detail::metrics {

// Upper bounds, in seconds, of the duration buckets: 100 us to 60 s, the
// range of a handler and of a message's wait on a queue.
inline constexpr std::array<double, 14> duration_bounds = {
  0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 60.0};

// A histogram of durations that many threads observe at once: one relaxed
// atomic add for the bucket and one for the sum, on a shard of the
// observing thread's own (threads take shards in turn), so that handlers
// on different cores do not fight over one cache line. Readers add the
// shards up; each bucket is exact, a read during observations may see a
// bucket before its sum.
class duration_histogram {
public:
  static constexpr std::size_t buckets = duration_bounds.size() + 1; // the last: +Inf
  static constexpr std::size_t shards = 4;

  struct snapshot {
    std::array<std::uint64_t, buckets> counts{}; // per bucket, not cumulative
    std::uint64_t sum_ns = 0;
  };

  void observe(std::chrono::nanoseconds d) noexcept;
  [[nodiscard]] snapshot read() const noexcept;

private:
  struct alignas(64) shard {
    std::array<std::atomic<std::uint64_t>, buckets> counts{};
    std::atomic<std::uint64_t> sum_ns{0};
  };
  std::array<shard, shards> shards_{};
};

// The histograms of one handler (one message type) of an endpoint.
struct handler_instruments {
  std::string message_type;
  duration_histogram handled;        // handler duration of attempts that succeeded
  duration_histogram failed;         // handler duration of attempts that threw
  duration_histogram send_to_start;  // bus-sent-at to the first attempt's start
};

// One endpoint's instruments, indexed like its definition's handlers, so
// the consumer finds a handler's set by the slot it already holds. Built
// once with the endpoint entry and never resized (readers hold no lock).
class endpoint_instruments {
public:
  explicit endpoint_instruments(std::vector<std::string> message_types);

  [[nodiscard]] handler_instruments& handler(std::size_t index) noexcept { return *by_handler_[index]; }
  [[nodiscard]] const std::vector<std::unique_ptr<handler_instruments>>& handlers() const noexcept {
    return by_handler_;
  }

  // On an endpoint with an outbox: from the commit of an attempt that
  // stored sends to their mark as sent (the transport took them all).
  duration_histogram outbox_dispatch;

private:
  std::vector<std::unique_ptr<handler_instruments>> by_handler_;
};

// Sends and publishes from outside handlers, from the call to the
// transport's answer (on a broker: its publisher confirm).
struct send_instruments {
  duration_histogram send;
  duration_histogram publish;
};

} // namespace bus::detail::metrics
