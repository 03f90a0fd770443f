// What the bus's page reads of a bus (see dashboard.hpp): the metrics'
// view of its endpoints and transport, plus what only a person looks at:
// the dependency breakers with their recent changes, each endpoint's error
// queue and retry budget. Built by message_bus::impl on each request.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../dependency_gate.hpp"
#include "../metrics/bus_view.hpp"
#include "bus/concurrency_limit.hpp"
#include "bus/policy/retry_budget.hpp"

namespace bus::detail::dashboard {

struct endpoint_extras {
  std::string error_queue;
  std::shared_ptr<retry_budget> budget; // null: it has none
  std::optional<adaptive_slots> adaptive; // set: its slots adapt
};

struct view {
  std::string bus_name;
  time_point now{};
  metrics::bus_view bus;
  std::vector<endpoint_extras> extras; // indexed like bus.endpoints
  std::shared_ptr<const dependency_gates> gates;
};

} // namespace bus::detail::dashboard
