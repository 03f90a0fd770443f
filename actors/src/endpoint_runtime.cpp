#include "endpoint_runtime.hpp"

#include <unistd.h>

namespace bus::detail {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0)
    return "unknown";
  return buf;
}

} // namespace

endpoint_runtime::endpoint_runtime(endpoint_definition definition,
                                   std::shared_ptr<const message_registry> registry,
                                   transport_ptr transport, loggers log,
                                   std::function<time_point()> clock,
                                   std::shared_ptr<endpoint_status> status,
                                   std::shared_ptr<endpoint_run> run, settings config)
  : def_(std::move(definition)), registry_(std::move(registry)), transport_(std::move(transport)),
    prefetch_(def_.stream || transport_->capabilities().durable ? def_.slots : 2 * def_.slots),
    log_(std::move(log)), clock_(std::move(clock)), status_(std::move(status)), run_(std::move(run)),
    host_(host_name()), process_(std::to_string(::getpid())), settings_(std::move(config)) {
  // Handler types were checked against the registry when the bus was built.
  for (const auto& slot : def_.handlers)
    if (auto type = registry_->find(slot.cpp_type))
      by_type_name_.emplace(type->name, &slot);
  // Names were checked against the bus's declarations when it was built.
  if (settings_.gates)
    for (const auto& name : def_.dependencies)
      if (auto it = settings_.gates->find(name); it != settings_.gates->end())
        deps_.push_back(it->second);
}

dependency_gate* endpoint_runtime::dependency(std::string_view name) const noexcept {
  for (const auto& gate : deps_)
    if (gate->name() == name)
      return gate.get();
  return nullptr;
}

bool endpoint_runtime::dependencies_closed() const noexcept {
  for (const auto& gate : deps_)
    if (!gate->closed())
      return false;
  return true;
}

void endpoint_runtime::emit(event_kind kind, std::string detail) const {
  if (!settings_.observer)
    return;
  bus_event e;
  e.kind = kind;
  e.at = now();
  e.endpoint = def_.name;
  e.detail = std::move(detail);
  notify(e);
}

bus_event endpoint_runtime::event_about(event_kind kind, const envelope& msg) const {
  bus_event e;
  e.kind = kind;
  e.at = now();
  e.endpoint = def_.name;
  e.message_id = msg.message_id;
  e.message_type = msg.message_type;
  e.delivery_count = msg.delivery_count;
  return e;
}

void endpoint_runtime::emit_prepared(const std::shared_ptr<const bus_event>& prepared) const {
  if (!prepared)
    return;
  auto e = *prepared;
  e.at = now();
  notify(e);
}

void endpoint_runtime::notify(const bus_event& e) const noexcept {
  try {
    settings_.observer(e);
  } catch (...) {
    // An observer's failure must not change what happens to a message.
  }
}

const handler_slot* endpoint_runtime::find_handler(std::string_view type_name) const {
  auto it = by_type_name_.find(std::string(type_name));
  return it == by_type_name_.end() ? nullptr : it->second;
}

} // namespace bus::detail
