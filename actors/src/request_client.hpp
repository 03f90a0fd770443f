// The receiving half of message_bus::request: one reply queue per bus
// (its own by default, see bus_builder::reply_queue), consumed by one actor that matches each reply to
// the request waiting for it by correlation id. A request registers its
// wait before its message goes out, so no reply can come before it. A
// request that hears nothing within its timeout is answered errc::timeout
// and forgotten; a reply that comes later (or to nobody) is acknowledged,
// logged on bus.request and dropped, so nothing piles up.
//
// A bus's own reply queue is declared temporary (queue_options): a broker
// deletes it once unused for a while, after its process is gone.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include "bus/transport.hpp"
#include "logging.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace bus::detail {

// What a request waits for: the reply's envelope (a fault<T> included), or
// why there is none. Called exactly once, on the client's actor thread.
using reply_callback = std::function<void(result<envelope_ptr>)>;

// Sends a request's message; called once its wait is registered, on the
// client's actor thread, and never for a request that is refused.
struct request_sender {
  std::function<void()> send;
};

class request_client : public std::enable_shared_from_this<request_client> {
public:
  // `prepare_inline`: declare the reply queue on the caller's thread (the
  // test coordinator runs no threads of its own).
  request_client(caf::actor_system& system, transport_ptr transport, loggers log,
                 std::string reply_queue, bool temporary, bool prepare_inline);
  ~request_client(); // stops consuming; waiting requests get errc::not_running
  request_client(const request_client&) = delete;
  request_client& operator=(const request_client&) = delete;

  // Calls `then` once the reply queue is declared and consumed, with the
  // error if that failed: inline when it is. The first call starts the
  // broker round trips on a thread of their own (a detached actor), never
  // the caller's, which may be a CAF worker; calls in the meantime wait
  // with it, and `then` runs on that thread. After a failure the next call
  // tries again. Thread-safe. Not from inside a transport's callback.
  void when_ready(std::function<void(result<void>)> then);
  [[nodiscard]] const std::string& address() const noexcept { return reply_queue_; }

  // Waits up to `timeout` for the reply correlated by `correlation_id`,
  // and once that wait is registered (so that no reply can come first)
  // sends the request with `sender`. errc::duplicate, and nothing sent, if
  // another request waits for that id. Thread-safe.
  void expect(std::string correlation_id, duration timeout, reply_callback done,
              request_sender sender);
  // The request could not be sent: its wait ends with `why`. Thread-safe.
  void abandon(std::string correlation_id, error why);

private:
  enum class stage { idle, preparing, consuming };

  result<void> declare_and_consume();
  void prepare(); // declares and consumes, then calls back who waited

  caf::actor_system* system_;
  transport_ptr transport_;
  loggers log_;
  std::string reply_queue_;
  bool temporary_;
  bool prepare_inline_;
  std::mutex mutex_; // guards stage_ and waiting_
  stage stage_ = stage::idle;
  std::vector<std::function<void(result<void>)>> waiting_; // for the preparation
  caf::actor actor_;
};

} // namespace bus::detail

// In process only, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::detail::reply_callback)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::detail::request_sender)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::error)
