// What the kill test and its worker process (rabbitmq_fault_worker) agree
// on: the message, which says itself how its handler fails, the policy
// the worker's endpoint runs it under, and the delay levels that hold its
// redeliveries on the broker.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/time.hpp"

namespace bus::test {

// Every attempt of the first `failing_deliveries` deliveries fails; in the
// delivery after them the first `failing_attempts` attempts fail and the
// next one succeeds. Deterministic whatever happens to the process: the
// delivery count travels with the message on the broker, and a delivery
// that starts over after a crash fails the same attempts again.
// A probe with crash_process set ends the worker process itself (_Exit,
// no cleanup, as a segfault would) in every delivery, before any attempt:
// a poison message only the broker's delivery limit stops.
struct fault_probe {
  std::string id;
  int failing_deliveries = 0;
  int failing_attempts = 0;
  bool crash_process = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(fault_probe, id, failing_deliveries, failing_attempts,
                                   crash_process)

// The worker's policy: on_any().retry(3, 300 ms).then_redeliver({1 s, 1.5 s}),
// without jitter. A delivery that fails for good holds its slot for three
// retry waits (900 ms): long enough for a kill to land in the middle of it
// on a loaded machine.
namespace fault_policy {
inline constexpr int immediate_retries = 3;
inline constexpr std::chrono::milliseconds retry_delay{300};
inline const std::vector<duration> redelivery_delays{std::chrono::milliseconds(1000),
                                                     std::chrono::milliseconds(1500)};
inline int redeliveries() {
  return static_cast<int>(redelivery_delays.size());
}
// A probe with this many failing deliveries never succeeds: it ends on the
// error queue after 1 + redeliveries() deliveries.
inline int never() {
  return redeliveries() + 1;
}
} // namespace fault_policy

// The delay levels of the worker: 7 levels of 100 ms (up to 12.7 s). No
// other test uses 7 levels, so these level queues hold this test's
// messages only, and the test can require them empty at the end.
inline constexpr std::chrono::milliseconds fault_delay_unit{100};
inline constexpr unsigned fault_delay_levels = 7;

} // namespace bus::test
