// The readiness rule (bus_view.hpp) and the text of a health report.
#include "bus/health.hpp"

#include "bus_view.hpp"

namespace bus {

std::string health_report::describe() const {
  if (ready)
    return "ready\n";
  std::string out = "not ready\n";
  for (const auto& p : problems)
    out += p + '\n';
  return out;
}

} // namespace bus

namespace bus::detail::metrics {

health_report assess(const bus_view& view) {
  health_report r;
  if (!view.running)
    r.problems.push_back("the bus is not running (not started, or stopped)");
  if (!view.transport.connected)
    r.problems.push_back("transport " + view.transport_name + " is not connected"
                         + (view.transport.detail.empty() ? "" : ": " + view.transport.detail));
  for (const auto& e : view.endpoints)
    if (!e.consuming)
      r.problems.push_back("endpoint '" + e.name + "' is not consuming");
  r.ready = r.problems.empty();
  return r;
}

} // namespace bus::detail::metrics
