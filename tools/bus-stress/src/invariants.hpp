// The invariants a stress run checks once the bus has stopped, each as a
// line of the final report. Every check can fail: it compares what the bus
// says (counters, queues) with what the event stream and the handlers saw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bus/bus.hpp"
#include "topology.hpp"
#include "transport_choice.hpp"

namespace stress {

struct check {
  std::string invariant; // a sentence: what must hold
  bool held = false;
  std::string detail; // the evidence, whether it held or not
};

// What the run did, beside the ledger.
struct run_facts {
  std::uint64_t expected_deliveries = 0; // sends + publishes x endpoints + probes
  bool finished_in_time = false;
  double seconds = 0;
};

[[nodiscard]] std::vector<check> check_invariants(const run_context& run,
                                                  const bus::message_bus& bus,
                                                  const chosen_transport& transport,
                                                  const run_facts& facts);

} // namespace stress
