#include "status_json.hpp"

#include "../endpoint_runtime.hpp"

namespace bus::detail::dashboard {

namespace {

nlohmann::json stats_json(const endpoint_stats& s) {
  return {{"received", s.received},
          {"handled", s.handled},
          {"failed_attempts", s.failed_attempts},
          {"immediate_retries", s.immediate_retries},
          {"redeliveries_scheduled", s.redeliveries_scheduled},
          {"dead_lettered", s.dead_lettered},
          {"discarded", s.discarded},
          {"skipped", s.skipped},
          {"in_flight", s.in_flight},
          {"pending_redelivery", s.pending_redelivery},
          {"rate_limited", s.rate_limited},
          {"dependency_paused", s.dependency_paused},
          {"retries_denied", s.retries_denied},
          {"expired", s.expired},
          {"concurrency_limit", s.concurrency_limit},
          {"busy_slots", s.busy_slots}};
}

nlohmann::json endpoint_json(const metrics::endpoint_view& e, const endpoint_extras& x,
                             time_point now) {
  auto stats = e.status->counters.snapshot();
  nlohmann::json j{{"name", e.name},
                   {"slots", e.slots},
                   {"consuming", e.consuming},
                   {"error_queue", x.error_queue},
                   {"stats", stats_json(stats)}};
  // A stream's reader: where it stands (-1 before its first settled
  // message) and how far behind the stream's tail.
  if (e.stream)
    j["stream"] = {{"offset", stats.stream_offset}, {"lag", stats.stream_lag}};
  if (x.adaptive)
    j["adaptive"] = {{"min", x.adaptive->min}, {"max", x.adaptive->max}};
  if (x.budget)
    j["retry_budget"] = {{"available", x.budget->available(now)},
                         {"settings", describe(x.budget->settings())}};
  return j;
}

nlohmann::json breaker_json(const dependency_gate& g, time_point now) {
  auto state = g.state(now);
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : g.recent_changes())
    changes.push_back({{"to", std::string(to_string(c.to))}, {"at", to_iso8601(c.at)}});
  nlohmann::json j{{"name", g.name()}, {"state", std::string(to_string(state))},
                   {"changes", std::move(changes)}};
  if (state == breaker_state::open)
    j["open_until"] = to_iso8601(g.open_until());
  return j;
}

nlohmann::json transport_json(const metrics::bus_view& b) {
  nlohmann::json stalled = nlohmann::json::array();
  for (const auto& q : b.transport.stalled)
    stalled.push_back({{"queue", q.queue}, {"messages", q.messages}, {"remedy", q.remedy}});
  return {{"name", b.transport_name},       {"connected", b.transport.connected},
          {"reconnects", b.transport.reconnects}, {"republished", b.transport.republished},
          {"detail", b.transport.detail},   {"stalled", std::move(stalled)}};
}

} // namespace

nlohmann::json status_json(const view& v, bool writable) {
  auto health = metrics::assess(v.bus);
  nlohmann::json endpoints = nlohmann::json::array();
  for (std::size_t i = 0; i < v.bus.endpoints.size(); ++i)
    endpoints.push_back(endpoint_json(v.bus.endpoints[i], v.extras.at(i), v.now));
  nlohmann::json breakers = nlohmann::json::array();
  if (v.gates)
    for (const auto& [name, gate] : *v.gates)
      breakers.push_back(breaker_json(*gate, v.now));
  return {{"bus", v.bus_name},
          {"time", to_iso8601(v.now)},
          {"running", v.bus.running},
          {"writable", writable},
          {"health", {{"ready", health.ready}, {"problems", health.problems},
                      {"warnings", health.warnings}}},
          {"transport", transport_json(v.bus)},
          {"endpoints", std::move(endpoints)},
          {"breakers", std::move(breakers)}};
}

} // namespace bus::detail::dashboard
