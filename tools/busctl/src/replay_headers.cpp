#include "replay_headers.hpp"

#include "bus/replay_headers.hpp"

namespace bus::ctl {

std::vector<std::pair<std::string, std::string>>
replay_additions(const queued_message& m, time_point now, const std::string& source_queue) {
  return bus::replay_additions(fault_of(m).replay_count.value_or(0), now, source_queue);
}

std::string replay_destination(const queued_message& m, const std::string& endpoint_queue) {
  auto original = fault_of(m).original_address;
  return original.empty() ? endpoint_queue : original;
}

} // namespace bus::ctl
