#include "bus/failed_messages.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "bus/header_names.hpp"

namespace bus {

failed_message failed_message_of(const envelope& msg, const std::string& queue) {
  auto text = [&](std::string_view name) {
    auto v = msg.headers.find(name);
    return v ? std::string(*v) : std::string();
  };
  failed_message m;
  m.queue = queue;
  m.id = msg.message_id;
  m.message_type = msg.message_type;
  m.endpoint = text(header::fault_endpoint);
  m.exception_type = text(header::fault_exception_type);
  m.exception_message = text(header::fault_message);
  m.reason = text(header::fault_reason);
  m.failed_at = text(header::fault_at);
  m.original_address = text(header::fault_original_address);
  m.stream_offset = text(header::fault_stream_offset);
  m.headers.assign(msg.headers.begin(), msg.headers.end());
  return m;
}

std::vector<failed_group> group_failed(const std::vector<failed_message>& messages) {
  using key = std::tuple<std::string, std::string, std::string>; // queue, endpoint, type
  std::map<key, failed_group> groups;
  for (const auto& m : messages) {
    auto& g = groups[key{m.queue, m.endpoint, m.exception_type}];
    if (g.count++ == 0) {
      g.queue = m.queue;
      g.endpoint = m.endpoint;
      g.exception_type = m.exception_type;
      g.first_seen = g.last_seen = m.failed_at;
      g.example = m.exception_message;
      continue;
    }
    g.first_seen = std::min(g.first_seen, m.failed_at);
    if (m.failed_at >= g.last_seen) {
      g.last_seen = m.failed_at;
      g.example = m.exception_message;
    }
  }
  std::vector<failed_group> out;
  out.reserve(groups.size());
  for (auto& [k, g] : groups)
    out.push_back(std::move(g));
  std::stable_sort(out.begin(), out.end(),
                   [](const failed_group& a, const failed_group& b) { return a.count > b.count; });
  return out;
}

} // namespace bus
