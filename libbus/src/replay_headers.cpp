#include "bus/replay_headers.hpp"

#include <array>
#include <charconv>

#include "bus/header_names.hpp"

namespace bus {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::int64_t replays_of(const envelope& msg) {
  std::int64_t count = 0;
  if (auto text = msg.headers.find(header::replay_count))
    std::from_chars(text->data(), text->data() + text->size(), count);
  return count;
}

} // namespace

bool kept_on_replay(std::string_view name) {
  if (starts_with(name, "x-"))
    return false;
  if (starts_with(name, "bus-fault-"))
    return name == header::fault_address;
  static constexpr std::array<std::string_view, 8> dropped{
    header::delivery_count, header::failed_attempts, header::first_failure_at,
    header::skipped_reason, header::wire_error,      header::replayed_at,
    header::replay_count,   header::replayed_from};
  for (auto d : dropped)
    if (name == d)
      return false;
  return true;
}

std::vector<std::pair<std::string, std::string>>
replay_additions(std::int64_t previous_replays, time_point now, const std::string& source_queue) {
  if (previous_replays < 0)
    previous_replays = 0;
  return {
    {std::string(header::delivery_count), "0"},
    {std::string(header::replayed_at), to_iso8601(now)},
    {std::string(header::replay_count), std::to_string(previous_replays + 1)},
    {std::string(header::replayed_from), source_queue},
  };
}

std::string stream_replay_refusal(std::string_view stream_offset,
                                  std::string_view original_address,
                                  std::string_view destination) {
  if (stream_offset.empty() || destination != original_address)
    return {};
  return "it was read from stream '" + std::string(original_address) + "' at offset "
         + std::string(stream_offset)
         + ": a replay would append it to the stream and every reader would handle it again; "
           "replay it to a queue (busctl replay --to QUEUE)";
}

envelope replayed_copy(const envelope& failed, time_point now, const std::string& source_queue) {
  envelope copy = failed;
  copy.headers = {};
  for (const auto& [name, value] : failed.headers)
    if (kept_on_replay(name))
      copy.headers.set(name, value);
  for (auto& [name, value] : replay_additions(replays_of(failed), now, source_queue))
    copy.headers.set(name, std::move(value));
  copy.delivery_count = 0;
  return copy;
}

} // namespace bus
