// The endpoint actor: takes deliveries from the transport, hands each to an
// idle consumer (one per concurrency slot), settles it with the transport
// when the consumer reports, replaces consumers that die, and stops by
// draining what is in flight. A stop finishes only once every consumer is
// gone, so that no handler of the endpoint runs after it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/rate_limiter.hpp"
#include "delivery_claim.hpp"
#include "endpoint_limit.hpp"
#include "endpoint_runtime.hpp"
#include "ready_line.hpp"
#include "redelivery_memory.hpp"

namespace bus::detail {

// A delivery a consumer works on, and which attempt it is at: if the
// consumer dies, its successor goes on from there.
struct work_in_progress {
  delivery item;
  claim_ptr claim; // who ends it, should the drain timeout pass
  int attempt = 1;
  // When it went to a consumer and how many were there then (itself
  // included): adaptive slots learn from each delivery's latency.
  time_point dispatched;
  std::size_t in_flight = 0;
};

// The consumers at work, each with what it works on. Their number is
// published as it changes (endpoint_stats::busy_slots, bus_busy_slots):
// the slots running a delivery now, which the deliveries in flight are
// not. Paused for a dependency, an endpoint holds deliveries and runs
// none.
class busy_consumers {
public:
  using map_type = std::unordered_map<caf::actor_addr, work_in_progress>;
  using iterator = map_type::iterator;

  void publish_to(std::atomic<std::int64_t>& gauge) noexcept {
    gauge_ = &gauge;
    publish();
  }

  template <class... Args>
  void emplace(Args&&... args) {
    map_.emplace(std::forward<Args>(args)...);
    publish();
  }
  iterator erase(iterator it) {
    auto next = map_.erase(it);
    publish();
    return next;
  }
  [[nodiscard]] iterator find(const caf::actor_addr& consumer) { return map_.find(consumer); }
  [[nodiscard]] iterator begin() noexcept { return map_.begin(); }
  [[nodiscard]] iterator end() noexcept { return map_.end(); }
  [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
  [[nodiscard]] bool empty() const noexcept { return map_.empty(); }

private:
  void publish() noexcept {
    if (gauge_)
      gauge_->store(static_cast<std::int64_t>(map_.size()), std::memory_order_relaxed);
  }

  map_type map_;
  std::atomic<std::int64_t>* gauge_ = nullptr;
};

struct endpoint_state {
  endpoint_runtime_ptr rt;
  std::vector<caf::actor> idle; // consumers waiting for work
  busy_consumers busy;          // consumer -> what it works on
  // Deliveries offered ahead to busy consumers (ready_line.hpp), by their
  // number, from the offer until the report that names who took it; null
  // and empty where the endpoint offers none (offers_ahead).
  std::shared_ptr<ready_line> ready;
  std::unordered_map<std::uint64_t, work_in_progress> offered;
  std::uint64_t offers = 0; // the last offer's number
  std::unordered_map<caf::actor_addr, caf::actor> consumers;
  std::deque<delivery> waiting; // taken from the transport, no idle consumer yet
  std::optional<endpoint_limit> limit; // deliveries at consumers at once (set at the spawn)
  caf::actor scheduler;         // holds this endpoint's messages waiting for redelivery
  // What the scheduler holds in memory: the endpoint's, so that a new
  // scheduler takes it over from one that died.
  std::shared_ptr<redelivery_memory> redeliveries = std::make_shared<redelivery_memory>();
  caf::actor breaker;           // the circuit breaker; null when rate limiting is off
  caf::actor cleaner;           // the outbox's inbox cleaner; null without an outbox
  caf::actor sweeper;           // the outbox's sweeper; null without an outbox
  std::optional<rate_limiter> limiter; // counts attempts in order; empty when off
  bool limited = false;         // rate limited: one message at a time
  bool pausing = false;         // rate limited and waiting after a failed attempt
  std::uint64_t pause_generation = 0; // a resume of an older generation is stale
  // The bus's start succeeded as a whole (go_atom): deliveries go to
  // consumers, and a stop cancels the consumption. Until then they only
  // wait, so that a start that fails elsewhere has handled nothing here
  // (and has cancelled the consumption itself).
  bool started = false;
  bool stopping = false;
  // The stop's cancel of the consumption is under way on a thread of its
  // own: deliveries may still arrive, so the stop cannot end yet.
  bool cancelling = false;
  bool finishing = false;       // nothing in flight: waiting for consumers, then helpers
  int helpers_stopping = 0;     // stop requests not yet confirmed
  // Dependency breakers (see dependency_pause.cpp): the state last seen of
  // each of rt->dependencies(), whether one is not closed (no message is
  // dispatched but a probe), the probe in flight and the gates whose probe
  // it holds (only these are this endpoint's to give back), and the
  // wake-up timer set for the end of an open breaker's wait.
  std::vector<breaker_state> seen;
  bool paused = false;
  std::optional<std::uint64_t> probe_tag;
  std::vector<dependency_gate*> probe_gates;
  std::optional<time_point> wake_at;
  static inline const char* name = "bus.endpoint";
};

// Whether the endpoint offers deliveries ahead to its busy consumers
// (ready_line.hpp): where they run on threads of their own
// (handler_threads::dedicated), since waking a sleeping thread for each
// delivery costs more than a short handler; with fixed slots (adaptive
// ones learn from the time since dispatch, which a wait in the line would
// stretch); and with neither rate limiting nor a dependency breaker, which
// stop dispatching the moment they trip: a consumer that takes an offer
// as it reports does not wait for the endpoint's word. And only where the
// endpoint holds more than a delivery per slot (in memory): on a durable
// broker nothing waits while every slot is busy, so nothing could be
// offered, and a consumer's look at the line would only spin.
[[nodiscard]] bool offers_ahead(const endpoint_runtime& rt);

// Spawns the endpoint's consumers. Deliveries arrive as (deliver_atom,
// delivery) from the transport's handler, which the bus registers right
// after the spawn, so that start() returns with every endpoint consuming.
// They wait until the bus sends (go_atom), once every endpoint of the
// start consumes.
caf::behavior endpoint_actor(caf::stateful_actor<endpoint_state>* self, endpoint_runtime_ptr rt);

} // namespace bus::detail
