#include "bus/message_registry.hpp"

namespace bus {

result<void> message_registry::add(message_type type) {
  if (type.name.empty())
    return error{errc::invalid_configuration, "a message type needs a non-empty name"};
  auto by_name = by_name_.find(type.name);
  auto by_type = by_type_.find(type.cpp_type);
  if (by_name != by_name_.end() && by_type != by_type_.end() && by_name->second == by_type->second)
    return {}; // the same registration again
  if (by_name != by_name_.end())
    return error{errc::duplicate,
                 "message name '" + type.name + "' is already registered for another C++ type"};
  if (by_type != by_type_.end())
    return error{errc::duplicate, "this C++ type is already registered as '"
                                    + by_type->second->name + "', not '" + type.name + "'"};
  auto ptr = std::make_shared<const message_type>(std::move(type));
  by_name_.emplace(ptr->name, ptr);
  by_type_.emplace(ptr->cpp_type, ptr);
  return {};
}

message_type_ptr message_registry::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

message_type_ptr message_registry::find(std::type_index type) const {
  auto it = by_type_.find(type);
  return it == by_type_.end() ? nullptr : it->second;
}

result<message_body> message_registry::decode(std::string_view type_name,
                                              std::string_view json_text) const {
  auto type = find(type_name);
  if (!type)
    return error{errc::unknown_message_type,
                 "no message type is registered as '" + std::string(type_name) + "'"};
  auto parsed = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return error{errc::malformed_message,
                 "the body of a '" + type->name + "' message is not valid JSON"};
  try {
    return message_body::typed(type->from_json(parsed), type);
  } catch (const std::exception& e) {
    return error{errc::malformed_message,
                 "the body does not fit message type '" + type->name + "': " + e.what()};
  }
}

result<message_body> message_registry::ensure_typed(std::string_view type_name,
                                                    const message_body& body) const {
  if (body.is_typed())
    return body;
  auto text = body.to_json_text();
  if (!text)
    return text.error();
  return decode(type_name, *text);
}

result<void> message_registry::route(std::type_index type, std::string queue) {
  auto known = find(type);
  if (!known)
    return error{errc::unknown_message_type, std::string("cannot route C++ type ") + type.name()
                                               + ": register it as a message first"};
  if (queue.empty())
    return error{errc::invalid_configuration,
                 "the route of message type '" + known->name + "' names no queue"};
  routes_[type] = std::move(queue);
  return {};
}

result<std::string> message_registry::route_of(std::type_index type) const {
  if (auto it = routes_.find(type); it != routes_.end())
    return it->second;
  auto known = find(type);
  auto what = known ? "message type '" + known->name + "'"
                    : std::string("C++ type ") + type.name() + " (not a registered message)";
  return error{errc::invalid_configuration,
               what + " has no route: name a queue, or route it with bus_builder::route<T>(queue)"};
}

} // namespace bus
