// The bus's page, on the bus's HTTP listener beside /metrics and /health
// (bus_builder::metrics): the page itself at /, its live state at
// /api/status, the failed messages of the endpoints' error queues at
// /api/failed and /api/failed/messages, the two writes, POST
// /api/failed/replay and /api/failed/purge, and an endpoint's policies at
// /policy/<endpoint>: described as JSON, and explained for an exception
// its handlers threw lately (?format=svg draws the plan, ?format=text says
// it).
//
// Read-only unless the bus has a token (bus_builder::dashboard_token, or
// BUS_DASHBOARD_TOKEN): a write must be a POST that carries it as
// "Authorization: Bearer <token>", else 403. A cross-site form cannot set
// that header, so a page elsewhere cannot make an operator's browser write.
#pragma once

#include <functional>
#include <string>

#include "../metrics/http_server.hpp"
#include "../recent_exceptions.hpp"
#include "bus/failed_messages.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/explain.hpp"
#include "view.hpp"

namespace bus::detail::dashboard {

class dashboard {
public:
  using recent_function =
    std::function<result<std::vector<recent_exceptions::entry>>(const std::string& endpoint)>;
  using policies_function = std::function<result<
    std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>>>(
    const std::string& endpoint)>;
  using explain_function = std::function<result<explanation>(
    const std::string& endpoint, const std::string& message_type, const std::exception_ptr&)>;

  // What the page reads and changes; every function may be called from any thread.
  struct sources {
    std::function<view()> read;  // the bus now
    error_queue_access* queues;  // null: the page says failed messages are not shown
    std::string token;           // empty: read-only
    recent_function recent;      // what an endpoint's handlers threw lately
    policies_function policies;  // each handler's message type and policy
    explain_function explain;    // message_bus::explain
  };

  explicit dashboard(sources from);

  [[nodiscard]] metrics::http_response answer(const metrics::http_request& request) const;

private:
  [[nodiscard]] metrics::http_response write(const metrics::http_request& request) const;
  [[nodiscard]] metrics::http_response policy(const std::string& endpoint,
                                              const std::string& query) const;
  [[nodiscard]] bool authorized(const std::string& authorization) const;

  sources from_;
};

} // namespace bus::detail::dashboard
