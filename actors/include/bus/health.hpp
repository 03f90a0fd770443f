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
  // What an operator should see and that does not keep this process from
  // working: a broker queue that holds messages it does not move (a
  // stranded delay level), with the remedy. Not a problem: every process
  // on the broker sees the same queue, and taking them all out of service
  // would turn a late redelivery into an outage.
  std::vector<std::string> warnings;

  // "ready", or "not ready" and one line per problem, then a line
  // "warning: ..." per warning: the probe's body.
  [[nodiscard]] std::string describe() const;
};

} // namespace bus
