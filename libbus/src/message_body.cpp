#include "bus/message_body.hpp"

#include <nlohmann/json.hpp>

namespace bus {

result<std::string> message_body::to_json_text() const {
  if (!object_)
    return text_;
  try {
    return type_->to_json(object_.get()).dump();
  } catch (const nlohmann::json::exception& e) {
    return error{errc::malformed_message,
                 "cannot serialize a '" + type_->name + "' message: " + e.what()};
  }
}

} // namespace bus
