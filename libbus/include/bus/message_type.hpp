// What the bus knows of one message type: its name on the wire, its C++
// type, and how to turn an object of it into JSON and back.
#pragma once

#include <memory>
#include <string>
#include <typeindex>

#include <nlohmann/json_fwd.hpp>

namespace bus {

struct message_type {
  std::string name;
  std::type_index cpp_type;
  // Serializes the object `obj` points to (of type `cpp_type`). Can throw
  // nlohmann::json::exception (for instance on invalid UTF-8).
  nlohmann::json (*to_json)(const void* obj);
  // Builds an object of type `cpp_type` from JSON. Throws on a mismatch.
  std::shared_ptr<const void> (*from_json)(const nlohmann::json& j);
};

using message_type_ptr = std::shared_ptr<const message_type>;

} // namespace bus
