// What the bus knows of one message type: its name on the wire, its C++
// type, and how to turn an object of it into JSON and back.
#pragma once

#include <memory>
#include <string>
#include <typeindex>

#include <nlohmann/json_fwd.hpp>

namespace bus {

struct fault_details;

struct message_type {
  std::string name;
  std::type_index cpp_type;
  // Serializes the object `obj` points to (of type `cpp_type`). Can throw
  // nlohmann::json::exception (for instance on invalid UTF-8).
  nlohmann::json (*to_json)(const void* obj);
  // Builds an object of type `cpp_type` from JSON. Throws on a mismatch.
  std::shared_ptr<const void> (*from_json)(const nlohmann::json& j);
  // Builds the fault<T> event for a failed message of this type; null for
  // a fault<T> itself (a failing fault handler raises no fault of a fault).
  std::shared_ptr<const void> (*make_fault)(const void* obj, const fault_details& details,
                                            const std::string& message_id) = nullptr;
  // The wire name of fault<T>; empty when make_fault is null.
  std::string fault_type_name;
};

using message_type_ptr = std::shared_ptr<const message_type>;

} // namespace bus
