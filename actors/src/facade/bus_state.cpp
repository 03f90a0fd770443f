#include "facade/bus_state.hpp"

#include <nlohmann/json.hpp>

#include "bus/policy/json.hpp"

namespace bus {

namespace detail {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty())
      out += '\n';
    out += line;
  }
  return out;
}

} // namespace detail

std::shared_ptr<detail::request_client> message_bus::impl::request_client() {
  std::lock_guard<std::mutex> guard(requests_mutex);
  if (!requests)
    requests = std::make_shared<detail::request_client>(*system, transport, log, reply_queue,
                                                        own_reply_queue, deterministic);
  return requests;
}

void message_bus::impl::equip(endpoint_entry& e) const {
  if (!sends)
    return;
  std::vector<std::string> types;
  for (const auto& slot : e.definition.handlers) {
    auto type = registry->find(slot.cpp_type);
    types.push_back(type ? type->name : std::string("?"));
  }
  e.status->instruments = std::make_shared<detail::metrics::endpoint_instruments>(std::move(types));
}

detail::metrics::bus_view message_bus::impl::view() const {
  detail::metrics::bus_view v;
  v.transport_name = std::string(transport->name());
  v.transport = transport->health();
  std::lock_guard<std::mutex> guard(mutex);
  v.running = state == phase::running;
  for (const auto& [name, e] : endpoints)
    if (!e.removed)
      v.endpoints.push_back({name, e.definition.slots,
                             v.running && e.active() && !e.run->stop_requested.load(), e.status,
                             e.definition.store != nullptr, e.definition.stream.has_value()});
  return v;
}

detail::dashboard::view message_bus::impl::dashboard_view() const {
  detail::dashboard::view v;
  v.bus_name = name;
  v.now = clock();
  v.bus = view();
  v.gates = gates;
  std::lock_guard<std::mutex> guard(mutex);
  for (const auto& ev : v.bus.endpoints) {
    auto e = endpoints.find(ev.name); // removed between the two locks: no extras
    v.extras.push_back(e == endpoints.end() ? detail::dashboard::endpoint_extras{}
                                            : detail::dashboard::endpoint_extras{
                                                e->second.definition.error_queue, e->second.budget,
                                                e->second.definition.adaptive});
  }
  return v;
}

result<explanation> message_bus::impl::explain(const std::string& endpoint,
                                               const std::string& message_type,
                                               const std::exception_ptr& exception) const {
  std::shared_ptr<const recoverability_config> config;
  {
    std::lock_guard<std::mutex> guard(mutex);
    auto it = endpoints.find(endpoint);
    if (it == endpoints.end())
      return error{errc::invalid_configuration,
                   "no endpoint '" + endpoint + "' (the endpoints: "
                       + detail::join_names(endpoints, [](const auto& e) { return e.first; })
                       + ")"};
    const auto& handlers = it->second.definition.handlers;
    auto name_of = [this](const detail::handler_slot& h) {
      return registry->find(h.cpp_type)->name;
    };
    for (const auto& h : handlers)
      if (name_of(h) == message_type || (message_type.empty() && handlers.size() == 1))
        config = h.recoverability;
    if (!config)
      return error{errc::invalid_configuration,
                   "endpoint '" + endpoint + "' has "
                       + (message_type.empty() ? std::string("several handlers")
                                               : "no handler for '" + message_type + "'")
                       + " (it handles: " + detail::join_names(handlers, name_of) + ")"};
  }
  return ::bus::explain(*config, exception);
}

result<std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>>>
message_bus::impl::policies(const std::string& endpoint) const {
  std::lock_guard<std::mutex> guard(mutex);
  auto it = endpoints.find(endpoint);
  if (it == endpoints.end() || it->second.removed)
    return error{errc::invalid_configuration, "no endpoint '" + endpoint + "'"};
  std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>> out;
  for (const auto& h : it->second.definition.handlers)
    out.emplace_back(registry->find(h.cpp_type)->name, h.recoverability);
  return out;
}

result<std::vector<detail::recent_exceptions::entry>>
message_bus::impl::recent_exceptions(const std::string& endpoint) const {
  std::lock_guard<std::mutex> guard(mutex);
  auto it = endpoints.find(endpoint);
  if (it == endpoints.end() || it->second.removed)
    return error{errc::invalid_configuration, "no endpoint '" + endpoint + "'"};
  return it->second.status->exceptions.all();
}

detail::send_later_function message_bus::impl::send_later() const {
  return [later = later](const std::string& queue, envelope msg, duration delay, completion done) {
    later->send_later(queue, std::move(msg), delay, std::move(done));
  };
}

void message_bus::impl::log_policies(const endpoint_definition& def) const {
  for (const auto& slot : def.handlers) {
    nlohmann::json description = *slot.recoverability;
    log.endpoint->info("endpoint '{}' handles '{}' with the policy {}", def.name,
                       registry->find(slot.cpp_type)->name, description.dump());
  }
}

} // namespace bus
