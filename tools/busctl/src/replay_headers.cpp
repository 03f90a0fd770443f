#include "replay_headers.hpp"

#include "bus/replay_headers.hpp"

namespace bus::ctl {

std::vector<std::pair<std::string, std::string>>
replay_additions(const queued_message& m, time_point now, const std::string& source_queue) {
  return bus::replay_additions(fault_of(m).replay_count.value_or(0), now, source_queue);
}

std::string replay_destination(const queued_message& m, const std::string& endpoint_queue,
                               const std::optional<std::string>& to) {
  if (to)
    return *to;
  auto original = fault_of(m).original_address;
  return original.empty() ? endpoint_queue : original;
}

std::string replay_refusal(const queued_message& m, const std::string& destination) {
  auto fault = fault_of(m);
  return stream_replay_refusal(fault.stream_offset, fault.original_address, destination);
}

} // namespace bus::ctl
