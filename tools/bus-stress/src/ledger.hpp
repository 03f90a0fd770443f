// What a stress run saw, written from many threads at once: the bus's event
// stream (every step of every delivery), and what the handlers themselves
// observed (running at once, running again after a success, consumer
// deaths). The invariant checks read it once the bus has stopped.
//
// Thread-safe: the observer and the handlers call it from actor threads,
// the producer and the progress line from their own.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bus/events.hpp"

namespace stress {

// One endpoint's tallies. Handler-side fields are written by its handlers.
struct endpoint_tally {
  std::string name;
  int slots = 0;
  std::atomic<std::uint64_t> events[11] = {}; // by bus::event_kind
  std::atomic<int> running{0};                // function handlers running right now
  std::atomic<int> most_running{0};
  std::atomic<std::uint64_t> over_limit{0}; // entries that found more than `slots` running
  std::atomic<std::uint64_t> kills{0};      // consumers killed by the handler actor
  std::atomic<std::uint64_t> died_attempts{0}; // failed events for bus::consumer_died
  std::atomic<std::uint64_t> outage_attempts{0};

  [[nodiscard]] std::uint64_t count(bus::event_kind k) const {
    return events[static_cast<int>(k)].load(std::memory_order_relaxed);
  }
};

// The journey of one delivery: one message on one endpoint.
struct journey {
  std::uint32_t terminal = 0;  // handled + dead_lettered + discarded (+ skipped)
  std::uint32_t after_end = 0; // steps that came after its terminal outcome
  bus::event_kind last = bus::event_kind::received;
  bus::event_kind first_after_end = bus::event_kind::received;
};

class ledger {
public:
  explicit ledger(std::vector<std::pair<std::string, int>> endpoints); // name, slots

  // The bus's observer: must be quick, thread-safe and never throw.
  void record(const bus::bus_event& e) noexcept;

  [[nodiscard]] endpoint_tally& tally(int endpoint) { return *tallies_[endpoint]; }
  [[nodiscard]] const endpoint_tally& tally(int endpoint) const { return *tallies_[endpoint]; }
  [[nodiscard]] int endpoint_count() const { return static_cast<int>(tallies_.size()); }

  // Handlers call these around their work, with the message's sequence number.
  // enter() returns false (and counts it) if that delivery had succeeded before.
  bool enter(int endpoint, std::uint64_t seq);
  void leave(int endpoint, bool succeeded, std::uint64_t seq);
  // For a handler actor, which runs one request at a time: no slot count.
  bool check_not_succeeded(int endpoint, std::uint64_t seq);
  void mark_succeeded(int endpoint, std::uint64_t seq);

  // Deliveries that reached a terminal outcome (each counted once).
  [[nodiscard]] std::uint64_t ended() const { return ended_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t ran_after_success() const { return ran_after_success_.load(); }
  [[nodiscard]] std::uint64_t outage_attempts() const;

  // Waits until `done()` holds or `deadline` passes, waking on every
  // terminal outcome and at least every 20 ms (for what no event announces,
  // e.g. counters settling). Returns done().
  template <class Done, class TimePoint> bool wait_until(Done done, TimePoint deadline) {
    std::unique_lock<std::mutex> lock(wait_mutex_);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline)
        return done();
      changed_.wait_for(lock, std::chrono::milliseconds(20));
    }
    return true;
  }

  // Every delivery's journey, keyed by "<endpoint>/<message id>".
  [[nodiscard]] std::unordered_map<std::string, journey> journeys() const;

private:
  static constexpr std::size_t shard_count = 64;
  struct journey_shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, journey> by_key;
  };
  struct success_shard {
    std::mutex mutex;
    std::unordered_set<std::uint64_t> keys; // seq * 4096 + endpoint index
  };

  std::vector<std::unique_ptr<endpoint_tally>> tallies_;
  std::unordered_map<std::string, int> index_; // endpoint name -> index
  std::array<journey_shard, shard_count> journeys_;
  std::array<success_shard, shard_count> successes_;
  std::atomic<std::uint64_t> ended_{0};
  std::atomic<std::uint64_t> ran_after_success_{0};
  std::mutex wait_mutex_;
  std::condition_variable changed_;
};

} // namespace stress
