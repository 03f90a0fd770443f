// fault<T>: the event the bus publishes once, when a message of type T
// reaches its terminal failure (the error queue), so that other endpoints
// can react: compensate, alert, retry by hand. A handler consumes it like
// any message: e.handle<bus::fault<order_placed>>(...).
//
// Registering T registers fault<T> too, under the name "fault<name>".
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/fault.hpp"
#include "bus/time.hpp"

namespace bus {

template <class T>
struct fault {
  T message;                  // the message that failed, as it was sent
  std::string message_id;     // its id
  std::string exception_type; // demangled
  std::string exception_message;
  std::string reason;         // why it went to the error queue
  std::string endpoint;       // where it failed
  std::string host;
  time_point at{};
  int immediate_retries = 0;
  std::uint32_t delivery_count = 0;
};

// The wire name of fault<T> for a T registered as `name`.
[[nodiscard]] inline std::string fault_name(const std::string& name) {
  return "fault<" + name + ">";
}

template <class T>
void to_json(nlohmann::json& j, const fault<T>& f) {
  j = nlohmann::json{{"message", f.message},
                     {"message_id", f.message_id},
                     {"exception_type", f.exception_type},
                     {"exception_message", f.exception_message},
                     {"reason", f.reason},
                     {"endpoint", f.endpoint},
                     {"host", f.host},
                     {"at", to_unix_ms(f.at)},
                     {"immediate_retries", f.immediate_retries},
                     {"delivery_count", f.delivery_count}};
}

template <class T>
void from_json(const nlohmann::json& j, fault<T>& f) {
  j.at("message").get_to(f.message);
  j.at("message_id").get_to(f.message_id);
  j.at("exception_type").get_to(f.exception_type);
  j.at("exception_message").get_to(f.exception_message);
  j.at("reason").get_to(f.reason);
  j.at("endpoint").get_to(f.endpoint);
  j.at("host").get_to(f.host);
  f.at = from_unix_ms(j.at("at").get<std::int64_t>());
  j.at("immediate_retries").get_to(f.immediate_retries);
  j.at("delivery_count").get_to(f.delivery_count);
}

namespace detail {

// Builds a fault<T> from the failed message (type-erased) and the facts.
template <class T>
std::shared_ptr<const void> make_fault_erased(const void* message, const fault_details& d,
                                              const std::string& message_id) {
  auto f = std::make_shared<fault<T>>();
  f->message = *static_cast<const T*>(message);
  f->message_id = message_id;
  f->exception_type = d.exception.type;
  f->exception_message = d.exception.message;
  f->reason = d.reason;
  f->endpoint = d.endpoint;
  f->host = d.host;
  f->at = d.at;
  f->immediate_retries = d.immediate_retries;
  f->delivery_count = d.delivery_count;
  return f;
}

} // namespace detail

} // namespace bus
