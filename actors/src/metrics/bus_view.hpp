// What the metrics exporter and the health check read of a bus: a copy of
// its endpoints' shared state taken under the bus's lock, so that neither
// reaches into the facade. Built by message_bus::impl on each scrape or
// health request; the counters behind it are atomics, read lock-free.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "bus/health.hpp"
#include "bus/transport.hpp"

namespace bus::detail {
struct endpoint_status;
} // namespace bus::detail

namespace bus::detail::metrics {

struct endpoint_view {
  std::string name;
  std::size_t slots = 0;
  bool consuming = false; // started, not stopping, its actor alive
  std::shared_ptr<const endpoint_status> status;
  bool outbox = false;    // it has a message store: its outbox series exist
  bool stream = false;    // it reads a stream: its offset and lag series exist
};

struct bus_view {
  bool running = false; // start() succeeded and no stop was asked
  std::string transport_name;
  transport_health transport;
  std::vector<endpoint_view> endpoints;
};

// Ready: the bus runs, every endpoint consumes, the transport is connected.
// Each problem names the endpoint or the transport concerned.
[[nodiscard]] health_report assess(const bus_view& view);

} // namespace bus::detail::metrics
