// The failed messages on the page: the error queues of a bus's endpoints
// read through the transport's error_queue_access, as groups (GET
// /api/failed) and as the messages of one group (GET
// /api/failed/messages); and the selection a replay or purge acts on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/failed_messages.hpp"

namespace bus::detail::dashboard {

// The most messages read from one error queue for a page.
inline constexpr std::size_t read_limit = 100000;

// Which messages a request means: a group (queue, endpoint, exception
// type), or one message of it by id. Read from the query or the JSON body.
struct failed_query {
  std::string queue;
  std::string endpoint;
  std::string exception_type;
  std::string id; // empty: the whole group
  [[nodiscard]] bool matches(const failed_message& m) const;
};

// The groups of every queue in `queues` (each read once), and what could
// not be read, named.
[[nodiscard]] nlohmann::json groups_json(error_queue_access& access,
                                         const std::vector<std::string>& queues);

// The messages `q` selects, head first, at most `limit`.
[[nodiscard]] nlohmann::json messages_json(error_queue_access& access, const failed_query& q,
                                           std::size_t limit);

} // namespace bus::detail::dashboard
