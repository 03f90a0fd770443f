// Counters of one endpoint, written by its actors and readable from any
// thread at any time without a request (they are atomics), so a test on
// virtual time and an operator's dashboard read them the same way.
#pragma once

#include <atomic>
#include <cstdint>

namespace bus {

// A consistent-enough copy of the counters: each value is exact, but they
// are read one after another while the endpoint may be working.
struct endpoint_stats {
  std::uint64_t received = 0;     // deliveries taken from the transport
  std::uint64_t handled = 0;      // ended in success
  std::uint64_t failed_attempts = 0;
  std::uint64_t immediate_retries = 0;
  std::uint64_t redeliveries_scheduled = 0;
  std::uint64_t dead_lettered = 0; // moved to the error queue
  std::uint64_t discarded = 0;
  std::uint64_t skipped = 0;       // no handler: moved to the skipped queue
  std::uint64_t requeued = 0;      // given back to the transport unfinished (stop, consumer death)
  std::int64_t in_flight = 0;      // taken and not settled yet
  std::int64_t pending_redelivery = 0;
  bool rate_limited = false;            // one message at a time right now
  std::uint64_t rate_limit_episodes = 0; // how often rate limiting started
  bool dependency_paused = false;        // a dependency breaker it depends on is not closed
  std::uint64_t dependency_pauses = 0;   // how often it paused for one
  std::uint64_t held_back = 0;           // messages given back unharmed (dependency down)
  std::uint64_t probes = 0;              // messages it let through as a half-open breaker's probe
  std::uint64_t retries_denied = 0; // retries the retry budget refused (each took its fallback)
  std::uint64_t expired = 0;        // never run: expired (also counted as discarded or dead-lettered)
  std::uint64_t duplicates = 0;     // copies of a message handled already, seen by the outbox's
                                    // inbox: ended without their handler, after sending what it
                                    // stored if that had not gone out (also counted as handled)
  std::uint64_t inbox_cleanups = 0;        // cleanups of the outbox's inbox records that ran through
  std::uint64_t inbox_records_cleaned = 0; // inbox records they deleted (past retention)
  std::uint64_t outbox_pending = 0;        // messages whose stored sends are not all out, and
  std::uint64_t outbox_pending_sends = 0;  // their sends, as the last sweep found them
  // Handler calls it allows at once now: its slots, or with adaptive slots
  // the limit it estimates (a probe's drain to the least is not shown).
  std::uint64_t concurrency_limit = 0;
  // Slots running a delivery now. Deliveries in flight that wait in the
  // endpoint (paused for a dependency, rate limited, offered ahead to a
  // busy slot) hold none.
  std::int64_t busy_slots = 0;
  // A stream endpoint's (issue 27): the last offset with everything up to
  // it settled, the one a restart resumes after (-1: none yet, or not a
  // stream endpoint), and the messages of the stream after it, as of the
  // last message read or settled.
  std::int64_t stream_offset = -1;
  std::uint64_t stream_lag = 0;
};

class endpoint_counters {
public:
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> handled{0};
  std::atomic<std::uint64_t> failed_attempts{0};
  std::atomic<std::uint64_t> immediate_retries{0};
  std::atomic<std::uint64_t> redeliveries_scheduled{0};
  std::atomic<std::uint64_t> dead_lettered{0};
  std::atomic<std::uint64_t> discarded{0};
  std::atomic<std::uint64_t> skipped{0};
  std::atomic<std::uint64_t> requeued{0};
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<std::int64_t> pending_redelivery{0};
  std::atomic<bool> rate_limited{false};
  std::atomic<std::uint64_t> rate_limit_episodes{0};
  std::atomic<bool> dependency_paused{false};
  std::atomic<std::uint64_t> dependency_pauses{0};
  std::atomic<std::uint64_t> held_back{0};
  std::atomic<std::uint64_t> probes{0};
  std::atomic<std::uint64_t> retries_denied{0};
  std::atomic<std::uint64_t> expired{0};
  std::atomic<std::uint64_t> duplicates{0};
  std::atomic<std::uint64_t> inbox_cleanups{0};
  std::atomic<std::uint64_t> inbox_records_cleaned{0};
  std::atomic<std::uint64_t> outbox_pending{0};
  std::atomic<std::uint64_t> outbox_pending_sends{0};
  std::atomic<std::uint64_t> concurrency_limit{0};
  std::atomic<std::int64_t> busy_slots{0};
  std::atomic<std::int64_t> stream_offset{-1};
  std::atomic<std::uint64_t> stream_lag{0};

  [[nodiscard]] endpoint_stats snapshot() const noexcept {
    auto r = std::memory_order_relaxed;
    return {received.load(r),  handled.load(r),   failed_attempts.load(r),
            immediate_retries.load(r), redeliveries_scheduled.load(r), dead_lettered.load(r),
            discarded.load(r), skipped.load(r),   requeued.load(r),
            in_flight.load(r), pending_redelivery.load(r), rate_limited.load(r),
            rate_limit_episodes.load(r),
            dependency_paused.load(r), dependency_pauses.load(r), held_back.load(r),
            probes.load(r), retries_denied.load(r), expired.load(r), duplicates.load(r),
            inbox_cleanups.load(r), inbox_records_cleaned.load(r), outbox_pending.load(r),
            outbox_pending_sends.load(r), concurrency_limit.load(r), busy_slots.load(r),
            stream_offset.load(r), stream_lag.load(r)};
  }
};

} // namespace bus
