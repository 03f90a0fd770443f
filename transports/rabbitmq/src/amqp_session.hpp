// One AMQP connection through rabbitmq-c 0.11: connect (TCP or TLS) and log
// in with timeouts, open channels, read frames without waiting, and turn
// every failure into a value that says how much it broke: one channel, or
// the whole connection.
//
// Not thread-safe, like the rabbitmq-c connection inside: a session is
// created, used and destroyed by one thread. Once it has failed at the
// connection level it is dead for good (alive() is false) and its owner
// makes a new one; rabbitmq-c state is never reused after an error.
#pragma once

#include <amqp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bus/error.hpp"
#include "bus/rabbitmq_settings.hpp"

namespace bus::detail {

enum class failure_scope {
  channel,    // the broker closed one channel (404, 406, ...); the rest still works
  connection, // the connection is gone: socket error, heartbeat timeout, connection.close
};

struct amqp_failure {
  failure_scope scope = failure_scope::connection;
  std::uint16_t reply_code =
      0;            // the broker's (404 NOT_FOUND, 320 CONNECTION_FORCED, ...); 0: library
  std::string text; // the broker's reply text, or rabbitmq-c's error string
};

// Success (empty), or what failed.
using amqp_status = std::optional<amqp_failure>;

class amqp_session {
public:
  // Connects to the broker of `settings` and logs in, within its
  // connect_timeout, with heartbeats and an RPC timeout of
  // operation_timeout. `role` completes the connection name the broker shows.
  // Errors are errc::transport_failure with a message that names the broker
  // (password redacted) and the likely cause. With failover nodes, tries
  // each node in the order of settings.nodes() and connects to the first
  // that logs in; the error then lists why each one failed.
  [[nodiscard]] static result<std::unique_ptr<amqp_session>> open(const rabbitmq_settings& settings,
                                                                  const std::string& role);

  // Closes the connection politely if it is alive (the broker requeues what
  // was delivered and not acknowledged), then frees everything.
  ~amqp_session();
  amqp_session(const amqp_session&) = delete;
  amqp_session& operator=(const amqp_session&) = delete;

  [[nodiscard]] amqp_connection_state_t raw() const noexcept { return conn_; }
  [[nodiscard]] int fd() const noexcept;
  [[nodiscard]] bool alive() const noexcept { return alive_; }
  // Why the session died; meaningful once !alive().
  [[nodiscard]] const amqp_failure& death() const noexcept { return death_; }

  // A channel number not used on this session yet, or 0 when they ran out.
  [[nodiscard]] amqp_channel_t new_channel_number() noexcept;
  amqp_status open_channel(amqp_channel_t ch);

  // The outcome of the RPC just made on `ch`. A server channel.close is
  // answered with close-ok (so that the number could be reopened); a
  // connection.close or a library error (timeout included: the reply may
  // still come, so the connection's state is unknown) kills the session.
  amqp_status rpc_status(amqp_channel_t ch);
  // The outcome of an asynchronous call (publish, ack, reject): a negative
  // status means the socket is gone and kills the session.
  amqp_status call_status(int status);

  // The next frame if one can be read now, without waiting. Heartbeats are
  // sent and checked inside, so a thread that calls this often keeps the
  // connection alive. Returns false when nothing is there.
  [[nodiscard]] bool poll_frame(amqp_frame_t& frame);
  // The content (header and body frames) that follows a basic.deliver or a
  // basic.return on `ch`. They follow at once, so this waits only briefly.
  amqp_status read_content(amqp_channel_t ch, amqp_message_t& out);

  // The broker closed `frame.channel` (a channel.close frame outside an
  // RPC): answers close-ok and returns the failure.
  amqp_failure channel_closed_by_broker(const amqp_frame_t& frame);
  // The broker closed the connection: answers close-ok, kills the session.
  amqp_failure connection_closed_by_broker(const amqp_frame_t& frame);

  // Kills the session for a reason found outside rabbitmq-c (a frame that
  // makes no sense, a confirm that never came); returns the failure.
  amqp_failure kill(std::string why);

private:
  explicit amqp_session(amqp_connection_state_t conn) : conn_(conn) {}
  // open() for the single node host:port of `settings`.
  static result<std::unique_ptr<amqp_session>> open_node(const rabbitmq_settings& settings,
                                                         const std::string& role);
  amqp_failure die(amqp_failure f);

  amqp_connection_state_t conn_ = nullptr;
  bool alive_ = true;
  amqp_failure death_;
  amqp_channel_t next_channel_ = 1;
};

// Waits until `fd` or `wake_fd` is readable or `timeout` passed.
void wait_readable(int fd, int wake_fd, std::chrono::milliseconds timeout);

// rabbitmq-c's text for a library status, e.g. "a socket error occurred".
[[nodiscard]] std::string library_error_text(int status);

// "404 NOT_FOUND - no queue 'x' in vhost '/'": a failure's text, with the
// broker's code when it gave one.
[[nodiscard]] std::string describe(const amqp_failure& f);

// The bus error for an operation that failed: 404 is errc::unknown_queue;
// 403, 405 and 406 (access refused, resource locked, arguments that differ
// from the existing object's) are errc::invalid_configuration, a mistake to
// fix rather than retry; anything else is errc::transport_failure.
// `context` says what was attempted, e.g. "declaring queue 'billing'".
[[nodiscard]] error to_error(const amqp_failure& f, const std::string& context);

} // namespace bus::detail
