// Errors as values for everything in the bus that can fail: one error code
// enum, an error that carries a human-readable message, and result<T>.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace bus {

enum class errc {
  invalid_configuration, // the bus or an endpoint was configured in a way that cannot work
  unknown_message_type,  // a type name or C++ type that the registry does not know
  malformed_message,     // a body or header that cannot be decoded
  unknown_queue,         // a queue the transport has not declared
  transport_failure,     // the transport could not carry out an operation
  not_running,           // the bus or endpoint is stopped or not started yet
  duplicate,             // a name registered twice
  timeout,               // a request's reply did not come in time
  request_failed,        // a request's handler failed for good: its fault<T> came back
  store_failure,         // the message store (outbox and inbox database) failed an operation
};

[[nodiscard]] std::string_view to_string(errc code) noexcept;

struct error {
  errc code;
  std::string message;
};

// Renders "<code>: <message>", the form every log line and CLI uses.
[[nodiscard]] std::string to_string(const error& err);

// The value of an operation that can fail. Deliberately small: C++17 has no
// std::expected, and the bus needs no monadic combinators.
template <class T>
class [[nodiscard]] result {
public:
  result(T value) : state_(std::move(value)) {}
  result(::bus::error err) : state_(std::move(err)) {}

  explicit operator bool() const noexcept { return state_.index() == 0; }
  [[nodiscard]] bool has_value() const noexcept { return state_.index() == 0; }

  T& value() & { assert(has_value()); return std::get<0>(state_); }
  const T& value() const& { assert(has_value()); return std::get<0>(state_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const bus::error& error() const { assert(!has_value()); return std::get<1>(state_); }

private:
  std::variant<T, bus::error> state_;
};

template <>
class [[nodiscard]] result<void> {
public:
  result() = default;
  result(::bus::error err) : error_(std::move(err)), failed_(true) {}
  // Any result seen only as success or failure, its value dropped: so code
  // that kept `result<void> r = bus.send(...)` compiles now that sends
  // return the message id.
  template <class T>
  result(const result<T>& other) {
    if (!other) {
      error_ = other.error();
      failed_ = true;
    }
  }

  explicit operator bool() const noexcept { return !failed_; }
  [[nodiscard]] bool has_value() const noexcept { return !failed_; }
  const bus::error& error() const { assert(failed_); return error_; }

private:
  bus::error error_{errc::invalid_configuration, {}};
  bool failed_ = false;
};

} // namespace bus
