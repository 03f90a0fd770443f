#include "failed_json.hpp"

namespace bus::detail::dashboard {

bool failed_query::matches(const failed_message& m) const {
  if (!id.empty())
    return m.id == id;
  return m.endpoint == endpoint && m.exception_type == exception_type;
}

nlohmann::json groups_json(error_queue_access& access, const std::vector<std::string>& queues) {
  nlohmann::json groups = nlohmann::json::array();
  nlohmann::json problems = nlohmann::json::array();
  std::size_t total = 0;
  for (const auto& queue : queues) {
    auto messages = access.read(queue, read_limit);
    if (!messages && messages.error().code == errc::unknown_queue)
      continue; // not declared yet (the bus has not started): nothing failed there
    if (!messages) {
      problems.push_back(to_string(messages.error()));
      continue;
    }
    total += messages->size();
    for (const auto& g : group_failed(*messages))
      groups.push_back({{"queue", g.queue},
                        {"endpoint", g.endpoint},
                        {"exception_type", g.exception_type},
                        {"count", g.count},
                        {"first_seen", g.first_seen},
                        {"last_seen", g.last_seen},
                        {"example", g.example}});
  }
  return {{"available", true}, {"total", total}, {"groups", std::move(groups)},
          {"problems", std::move(problems)}};
}

nlohmann::json messages_json(error_queue_access& access, const failed_query& q,
                             std::size_t limit) {
  auto messages = access.read(q.queue, read_limit);
  if (!messages)
    return {{"error", to_string(messages.error())}};
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : *messages) {
    if (!q.matches(m))
      continue;
    if (out.size() == limit)
      break;
    out.push_back({{"id", m.id},
                   {"message_type", m.message_type},
                   {"exception_type", m.exception_type},
                   {"exception_message", m.exception_message},
                   {"reason", m.reason},
                   {"failed_at", m.failed_at},
                   {"headers", m.headers}});
  }
  return {{"messages", std::move(out)}};
}

} // namespace bus::detail::dashboard
