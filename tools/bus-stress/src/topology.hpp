// The topology a stress run drives: endpoints with drawn slots and
// policies, each handling `job` with a function, `actor_job` with a
// handler actor (which may kill the consumer that asks) and `probe`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "bus/bus.hpp"
#include "ledger.hpp"
#include "options.hpp"

namespace stress {

// What every handler of the run reads: the options, the ledger, and the
// outage window. Shared by handlers on many threads: read-only but for the
// ledger (thread-safe) and the window (atomics).
struct run_context {
  options opts;
  ledger book;
  // The outage window, as steady_clock ticks; empty (0, 0) until it starts.
  std::atomic<std::int64_t> outage_from{0};
  std::atomic<std::int64_t> outage_until{0};

  run_context(options o, std::vector<std::pair<std::string, int>> endpoints)
      : opts(std::move(o)), book(std::move(endpoints)) {}

  [[nodiscard]] bool in_outage() const {
    auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return now >= outage_from.load(std::memory_order_relaxed)
           && now < outage_until.load(std::memory_order_relaxed);
  }
  void start_outage() {
    auto now = std::chrono::steady_clock::now();
    auto until = now + std::chrono::milliseconds(opts.outage_ms);
    outage_until.store(until.time_since_epoch().count());
    outage_from.store(now.time_since_epoch().count());
  }
};

// One endpoint as drawn for this run.
struct endpoint_plan {
  std::string name;
  int slots = 1;
  policy_kind policy = policy_kind::retry;
};

// Draws each endpoint's slots and policy from the options; endpoints are
// named <names>-0, <names>-1, ...
[[nodiscard]] std::vector<endpoint_plan> draw_topology(const options& o, const std::string& names,
                                                       std::mt19937_64& random);

// Spawns the handler actor of each endpoint (to shut down after the bus).
[[nodiscard]] std::vector<caf::actor> spawn_handler_actors(caf::actor_system& sys,
                                                           std::shared_ptr<run_context> run);

// Adds every endpoint of `plan` to `b`, served by `actors` (one each).
void add_endpoints(bus::bus_builder& b, const std::vector<endpoint_plan>& plan,
                   const std::vector<caf::actor>& actors, std::shared_ptr<run_context> run);

} // namespace stress
