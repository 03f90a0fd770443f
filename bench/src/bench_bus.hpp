// The bus side of every case: one endpoint, "bench", on the in-memory
// transport, handling `ping`. Its log lines go to a null sink: formatted
// (the bus pays for that) but never written.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "workload.hpp"

namespace bench {

inline const std::string bench_queue = "bench";

struct bench_bus {
  std::shared_ptr<bus::in_memory_transport> transport;
  std::unique_ptr<bus::message_bus> bus;
};

// Builds (does not start) the bus. `handler` is called as
// handler(const ping&, bus::handler_context&); `policy` may be empty.
// `threads` is the endpoint's handler_threads: caf_workers for the no-op
// handlers of the in-memory cases (they never block: the documented
// choice, and what those cases have always measured), the default
// (dedicated) for the blocking cases and the row that shows its cost.
// `configure`, if set, adds bus-wide settings last (the resilience-cost
// rows: a retry budget, a dependency breaker). `adaptive`, if set, replaces
// the fixed `slots`.
template <class Handler>
bench_bus make_bench_bus(caf::actor_system& sys, int slots, bus::handler_threads threads,
                         Handler handler, std::function<void(bus::policy_builder&)> policy = {},
                         std::function<void(bus::bus_builder&)> configure = {},
                         bool metrics = false,
                         std::optional<bus::adaptive_slots> adaptive = std::nullopt) {
  bench_bus out;
  out.transport = std::make_shared<bus::in_memory_transport>();
  bus::bus_builder b{sys};
  b.transport(out.transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<ping>("bench_ping");
  if (policy)
    b.add_resilience(policy);
  if (metrics) // served on a free port; nobody scrapes it during the run
    b.metrics("127.0.0.1:0");
  b.endpoint(bench_queue, [&](bus::endpoint_builder& e) {
    if (adaptive)
      e.slots(*adaptive);
    else
      e.slots(static_cast<std::size_t>(slots));
    e.handler_threads(threads).handle<ping>(std::move(handler));
  });
  if (configure)
    configure(b);
  auto built = b.build();
  if (!built)
    throw std::runtime_error("the benchmark bus does not build: " + built.error().message);
  out.bus = std::move(*built);
  return out;
}

} // namespace bench
