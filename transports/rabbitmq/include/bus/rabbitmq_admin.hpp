// The transport's administration seam: what an operator's tool (busctl)
// does to a queue, through the transport's own connection code (timeouts,
// TLS, errors that never show the password) and without rabbitmq-c in
// sight. Queue depth, purge, publish with confirm, and a browse: messages
// taken from the head of a queue without acknowledgement, that are then
// acknowledged one by one (removed), copied elsewhere with a confirm, or
// given back.
//
// Not thread-safe: an admin and its browses are used by one thread, like
// the one AMQP connection they share. Nothing here throws; failures are
// values (bus/error.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/error.hpp"
#include "bus/rabbitmq_settings.hpp"

namespace bus {

namespace detail {
struct rabbitmq_admin_state;
struct rabbitmq_browse_state;
} // namespace detail

struct rabbitmq_header {
  std::string name;
  // Text kinds as strings (bytes as they are), integers and floats as
  // numbers, timestamps as their seconds, decimals as text, tables as
  // objects, arrays as arrays, void as null: what the broker sent, in a form
  // a tool can print and test. x-death, say, is an array of objects.
  nlohmann::json value;
};

// A message read from a queue, copied out of the client library.
struct rabbitmq_queued_message {
  std::vector<rabbitmq_header> headers;                  // in wire order
  nlohmann::json properties = nlohmann::json::object(); // the AMQP properties set, headers excluded
  std::string body;
  bool redelivered = false; // the broker had delivered it before (to anyone)
};

// A passive declare's answer.
struct rabbitmq_queue_depth {
  std::uint32_t messages = 0;  // ready ones: not those delivered and not settled yet
  std::uint32_t consumers = 0; // attached consumers (what they hold a browse cannot see)
};

// A new message for publish(): headers are sent as UTF-8 text.
struct rabbitmq_outgoing {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string message_id; // empty: no message-id property
  std::string body;
};

// How a copy (rabbitmq_browse::copy_to) differs from the message it copies.
// It is always persistent, and never has an expiration (a copy meant to be
// handled must not expire on the way).
struct rabbitmq_copy_changes {
  // Which of the original's headers the copy keeps; null keeps them all.
  std::function<bool(std::string_view name)> keep_header;
  // Text headers written after the kept ones.
  std::vector<std::pair<std::string, std::string>> added_headers;
};

class rabbitmq_browse;

class rabbitmq_admin {
public:
  // Validates the settings, connects and logs in within the connect
  // timeout; the broker shows the connection as "<connection_name> admin".
  // errc::invalid_configuration for bad settings, errc::transport_failure
  // when the broker is unreachable or refuses the login (the message says
  // which and never contains the password).
  [[nodiscard]] static result<std::unique_ptr<rabbitmq_admin>>
  connect(const rabbitmq_settings& settings);

  // Closes the connection: every browse still open gives its messages back.
  ~rabbitmq_admin();
  rabbitmq_admin(const rabbitmq_admin&) = delete;
  rabbitmq_admin& operator=(const rabbitmq_admin&) = delete;

  // Errors of the operations below: errc::unknown_queue when `queue` does
  // not exist; errc::transport_failure for anything else the broker or the
  // connection refused (the message names the operation and the broker).

  // A passive declare: creates nothing.
  [[nodiscard]] result<rabbitmq_queue_depth> depth(const std::string& queue);
  // queue.purge: deletes every ready message; returns how many.
  [[nodiscard]] result<std::uint32_t> purge(const std::string& queue);
  // To `queue` through the default exchange, mandatory and persistent;
  // returns once the broker confirmed it. errc::unknown_queue when the
  // broker returned it (no such queue).
  [[nodiscard]] result<void> publish(const std::string& queue, const rabbitmq_outgoing& message);

  // Takes the messages of `queue` from its head with basic.get, without
  // acknowledging them, until the queue is empty (as the broker counted at
  // the last take) or `limit` were taken (0: no limit). They stay the
  // broker's: nobody else receives them while the browse holds them, and
  // whatever the browse does not acknowledge goes back to the queue when it
  // ends. On a classic queue they go back in their places; a quorum queue
  // (RabbitMQ 3.10) puts them behind the others and counts each browse as a
  // delivery: x-delivery-count rises, and enough browses reach its
  // x-delivery-limit. The browse shares this admin's connection and keeps
  // it open while it lives.
  [[nodiscard]] result<rabbitmq_browse> browse(const std::string& queue, std::size_t limit);

  // False once the connection has failed; every call then fails.
  [[nodiscard]] bool connected() const noexcept;

private:
  friend class rabbitmq_browse;
  explicit rabbitmq_admin(std::shared_ptr<detail::rabbitmq_admin_state> state);
  std::shared_ptr<detail::rabbitmq_admin_state> state_;
};

class rabbitmq_browse {
public:
  rabbitmq_browse(rabbitmq_browse&&) noexcept;
  rabbitmq_browse& operator=(rabbitmq_browse&&) noexcept;
  // give_back(), if it was not called.
  ~rabbitmq_browse();

  [[nodiscard]] const std::string& queue() const noexcept;
  // Head first, as taken.
  [[nodiscard]] const std::vector<rabbitmq_queued_message>& messages() const noexcept;
  // The limit stopped the reading while the queue had more.
  [[nodiscard]] bool truncated() const noexcept;
  // The queue's consumers when the browse began.
  [[nodiscard]] std::uint32_t consumers() const noexcept;

  // Acknowledges messages()[index]: the broker removes it from the queue.
  // Asynchronous in AMQP: give_back() returning true says the broker has
  // processed it. An error means the connection is gone.
  [[nodiscard]] result<void> ack(std::size_t index);

  // Publishes a copy of messages()[index] (its properties and body, its
  // headers as `changes` says) to `queue` through the default exchange,
  // mandatory, and waits for the broker's confirm up to the settings'
  // operation timeout. The original stays held by the browse. Errors:
  // errc::unknown_queue when the broker returned the copy (no such queue);
  // errc::transport_failure when it refused it (basic.nack), did not confirm
  // it in time, or the channel or connection failed: can_publish() then says
  // whether another copy may be tried.
  [[nodiscard]] result<void> copy_to(std::size_t index, const std::string& queue,
                                     const rabbitmq_copy_changes& changes);
  // False once a failure left publishing impossible on this browse.
  [[nodiscard]] bool can_publish() const noexcept;

  // Ends the browse: closes its channel, so that every message not
  // acknowledged goes back to the queue. True if the broker answered the
  // close, which it does only after the acknowledgements sent before it;
  // false leaves their outcome unknown. Idempotent.
  bool give_back();

private:
  friend class rabbitmq_admin;
  explicit rabbitmq_browse(std::unique_ptr<detail::rabbitmq_browse_state> state);
  std::unique_ptr<detail::rabbitmq_browse_state> state_;
};

} // namespace bus
