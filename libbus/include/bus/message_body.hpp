// The body of an envelope. In process it is the typed message itself, an
// immutable object shared by every reader and serialized only when it must
// leave (an error queue, a broker, a log line); off the wire it is the JSON
// text until the receiving endpoint decodes it, once.
#pragma once

#include <memory>
#include <string>
#include <typeindex>
#include <utility>

#include "bus/error.hpp"
#include "bus/message_type.hpp"

namespace bus {

class message_body {
public:
  message_body() = default;

  // A body holding `object` of the registered `type`.
  static message_body typed(std::shared_ptr<const void> object, message_type_ptr type) {
    message_body b;
    b.object_ = std::move(object);
    b.type_ = std::move(type);
    return b;
  }

  // A body holding serialized JSON text, not decoded yet.
  static message_body text(std::string json) {
    message_body b;
    b.text_ = std::move(json);
    return b;
  }

  [[nodiscard]] bool is_typed() const noexcept { return object_ != nullptr; }
  [[nodiscard]] bool empty() const noexcept { return !object_ && text_.empty(); }
  [[nodiscard]] const message_type_ptr& type() const noexcept { return type_; }
  [[nodiscard]] const std::shared_ptr<const void>& object() const noexcept { return object_; }
  // The size of the JSON text a body arrived as; 0 for a typed body.
  [[nodiscard]] std::size_t text_size() const noexcept { return text_.size(); }

  // The typed object if the body holds a T, else nullptr.
  template <class T>
  [[nodiscard]] const T* get() const noexcept {
    if (!object_ || type_->cpp_type != std::type_index(typeid(T)))
      return nullptr;
    return static_cast<const T*>(object_.get());
  }

  // The JSON text: the stored text, or the typed object serialized now.
  // Fails with malformed_message when the object cannot be serialized.
  [[nodiscard]] result<std::string> to_json_text() const;

private:
  std::shared_ptr<const void> object_;
  message_type_ptr type_;
  std::string text_;
};

} // namespace bus
