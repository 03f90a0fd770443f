#include "facade/bus_state.hpp"

namespace bus {

std::optional<endpoint_stats> message_bus::stats(const std::string& endpoint) const {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  auto it = impl_->endpoints.find(endpoint);
  if (it == impl_->endpoints.end())
    return std::nullopt;
  return it->second.status->counters.snapshot();
}

std::vector<std::string> message_bus::endpoint_names() const {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [name, e] : impl_->endpoints)
    out.push_back(name);
  return out;
}

result<explanation> message_bus::explain(const std::string& endpoint,
                                         const std::string& message_type,
                                         const std::exception_ptr& exception) const {
  return impl_->explain(endpoint, message_type, exception);
}

const message_registry& message_bus::registry() const noexcept {
  return *impl_->registry;
}

const std::string& message_bus::reply_queue() const noexcept {
  return impl_->reply_queue;
}

transport& message_bus::transport() const noexcept {
  return *impl_->transport;
}

health_report message_bus::health() const {
  return impl_->metrics ? impl_->metrics->health() : detail::metrics::assess(impl_->view());
}

std::string message_bus::metrics_address() const {
  return impl_->metrics ? impl_->metrics->address() : std::string();
}

time_point message_bus::now() const {
  return impl_->clock();
}

std::shared_ptr<const message_registry> message_bus::shared_registry() const {
  return impl_->registry;
}

} // namespace bus
