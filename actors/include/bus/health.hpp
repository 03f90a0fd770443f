// Whether a bus is ready for work, as an orchestrator's readiness probe
// asks it: every endpoint consumes and the transport is connected. The
// bus serves it at /health/ready when it serves metrics
// (bus_builder::metrics), and message_bus::health() returns it to code.
#pragma once

#include <string>
#include <vector>

namespace bus {

struct health_report {
  bool ready = false;
  // What keeps the bus from being ready, one sentence each; empty if ready.
  std::vector<std::string> problems;

  // "ready", or "not ready" and one line per problem: the probe's body.
  [[nodiscard]] std::string describe() const;
};

} // namespace bus
