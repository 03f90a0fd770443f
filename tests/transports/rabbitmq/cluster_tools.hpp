// What the cluster's tests run beside the transport: the fixture's programs
// (broker.env: BUS_RABBITMQ_KILL, BUS_RABBITMQ_LEADER, ...) and busctl, each
// with what it printed kept, so that a failure says why and not only that.
#pragma once

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "broker.hpp"

namespace bus::test {

// Node n's (1..3) Erlang name, as rabbitmqctl shows leaders.
inline std::string node_name(int n) {
  return broker_env("BUS_RABBITMQ_NODE" + std::to_string(n) + "_NAME");
}

// The node (1..3) that leads quorum queue `queue`; 0 if nobody says.
inline int leader_of(const std::string& queue) {
  std::istringstream lines(run_broker_tool("BUS_RABBITMQ_LEADER", "'" + queue + "'").text);
  for (std::string line; std::getline(lines, line);)
    if (line == "1" || line == "2" || line == "3")
      return line[0] - '0';
  return 0;
}

// `busctl move-leader QUEUE`, as an operator runs it on the cluster.
inline command_output busctl_move_leader(const std::string& queue) {
  return output_of("BUS_RABBITMQ_CTL='" + broker_env("BUS_RABBITMQ_CTL")
                   + "' " BUS_BUSCTL " move-leader '" + queue + "'");
}

} // namespace bus::test
