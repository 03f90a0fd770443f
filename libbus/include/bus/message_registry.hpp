// The message registry: a name on the wire <-> a C++ type <-> its JSON form.
// A struct becomes a message by registering it under a name; it needs
// nlohmann's to_json/from_json (NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE will do),
// a copy constructor and a default constructor.
//
// A registry is filled while the bus is built and only read afterwards, so
// readers on any thread need no lock.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "bus/error.hpp"
#include "bus/fault_event.hpp"
#include "bus/message_body.hpp"
#include "bus/message_type.hpp"

namespace bus {

namespace detail {

template <class T>
nlohmann::json to_json_erased(const void* obj) {
  return nlohmann::json(*static_cast<const T*>(obj));
}

template <class T>
std::shared_ptr<const void> from_json_erased(const nlohmann::json& j) {
  return std::make_shared<const T>(j.get<T>());
}

} // namespace detail

class message_registry {
public:
  // Registers T under `name`, and fault<T> under fault_name(name). Fails
  // with errc::duplicate if a name is taken by another type or T is
  // registered under another name; the same pair twice is harmless.
  template <class T>
  result<void> add(std::string name) {
    auto fault_type = fault_name(name);
    if (auto added = add(message_type{std::move(name), std::type_index(typeid(T)),
                                      &detail::to_json_erased<T>, &detail::from_json_erased<T>,
                                      &detail::make_fault_erased<T>, fault_type});
        !added)
      return added;
    return add(message_type{std::move(fault_type), std::type_index(typeid(fault<T>)),
                            &detail::to_json_erased<fault<T>>, &detail::from_json_erased<fault<T>>,
                            nullptr, {}});
  }

  result<void> add(message_type type);

  [[nodiscard]] message_type_ptr find(std::string_view name) const;
  [[nodiscard]] message_type_ptr find(std::type_index type) const;
  template <class T>
  [[nodiscard]] message_type_ptr find() const {
    return find(std::type_index(typeid(T)));
  }

  // A typed body holding a copy of `msg`; errc::unknown_message_type if T
  // is not registered.
  template <class T>
  [[nodiscard]] result<message_body> make_body(T msg) const {
    auto type = find<T>();
    if (!type)
      return error{errc::unknown_message_type,
                   std::string("C++ type ") + typeid(T).name() + " is not a registered message"};
    return message_body::typed(std::make_shared<const T>(std::move(msg)), std::move(type));
  }

  // Decodes JSON text into a typed body of the type registered as
  // `type_name`. Fails with unknown_message_type or malformed_message, and
  // the error says which and why.
  [[nodiscard]] result<message_body> decode(std::string_view type_name,
                                            std::string_view json_text) const;

  // Makes `body` typed: returns it as it is when it already is, else decodes
  // its text as `type_name`.
  [[nodiscard]] result<message_body> ensure_typed(std::string_view type_name,
                                                  const message_body& body) const;

  // Registered types, each message's fault<T> included.
  [[nodiscard]] std::size_t size() const noexcept { return by_name_.size(); }

  // Routing by type: a send of a T that names no queue goes to `queue`.
  // T must be registered first; a second route for T replaces the first.
  // errc::unknown_message_type or invalid_configuration (empty queue).
  template <class T>
  result<void> route(std::string queue) {
    return route(std::type_index(typeid(T)), std::move(queue));
  }
  result<void> route(std::type_index type, std::string queue);

  // The queue routed for T; an errc::invalid_configuration error that names
  // the type (its registered name, or its C++ name) when it has none.
  template <class T>
  [[nodiscard]] result<std::string> route_of() const {
    return route_of(std::type_index(typeid(T)));
  }
  [[nodiscard]] result<std::string> route_of(std::type_index type) const;

private:
  std::unordered_map<std::string, message_type_ptr> by_name_;
  std::unordered_map<std::type_index, message_type_ptr> by_type_;
  std::unordered_map<std::type_index, std::string> routes_;
};

} // namespace bus
