// The readiness rule (bus_view.hpp) and the text of a health report.
#include "bus/health.hpp"

#include "bus_view.hpp"

namespace bus {

std::string health_report::describe() const {
  std::string out = ready ? "ready\n" : "not ready\n";
  for (const auto& p : problems)
    out += p + '\n';
  for (const auto& w : warnings)
    out += "warning: " + w + '\n';
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
  for (const auto& q : view.transport.stalled)
    r.warnings.push_back(
        "queue '" + q.queue + "' holds " + std::to_string(q.messages)
        + " messages that have not moved for "
        + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(q.stalled_for).count())
        + " s; remedy: " + q.remedy);
  r.ready = r.problems.empty();
  return r;
}

} // namespace bus::detail::metrics
