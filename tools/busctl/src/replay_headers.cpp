#include "replay_headers.hpp"

#include <array>

#include "bus/header_names.hpp"
#include "bus/rabbitmq_transport.hpp" // rabbitmq_wire_error_header

namespace bus::ctl {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

} // namespace

bool kept_on_replay(std::string_view name) {
  if (starts_with(name, "x-"))
    return false;
  if (starts_with(name, "bus-fault-"))
    return name == header::fault_address;
  static constexpr std::array<std::string_view, 8> dropped{
    header::delivery_count,      header::failed_attempts,     header::first_failure_at,
    header::skipped_reason,      rabbitmq_wire_error_header, header::replayed_at,
    header::replay_count, header::replayed_from};
  for (auto d : dropped)
    if (name == d)
      return false;
  return true;
}

std::vector<std::pair<std::string, std::string>>
replay_additions(const queued_message& m, time_point now, const std::string& source_queue) {
  auto previous = fault_of(m).replay_count.value_or(0);
  if (previous < 0)
    previous = 0;
  return {
    {std::string(header::delivery_count), "0"},
    {std::string(header::replayed_at), to_iso8601(now)},
    {std::string(header::replay_count), std::to_string(previous + 1)},
    {std::string(header::replayed_from), source_queue},
  };
}

std::string replay_destination(const queued_message& m, const std::string& endpoint_queue) {
  auto original = fault_of(m).original_address;
  return original.empty() ? endpoint_queue : original;
}

} // namespace bus::ctl
