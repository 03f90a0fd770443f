#include "bus/type_mapping.hpp"

#include <utility>

namespace bus {

type_mapping every_message_is(std::string type) {
  return [type = std::move(type)](const envelope&) { return type; };
}

type_mapping type_by_header(std::string name, std::map<std::string, std::string> types) {
  return [name = std::move(name), types = std::move(types)](const envelope& msg) {
    auto value = msg.headers.find(name);
    if (!value)
      return std::string();
    auto it = types.find(std::string(*value));
    return it == types.end() ? std::string() : it->second;
  };
}

} // namespace bus
