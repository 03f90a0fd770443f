#include "amqp_session.hpp"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <poll.h>
#include <unistd.h>

#include <array>

#include "amqp_bytes.hpp"

namespace bus::detail {

namespace {

// Where Debian keeps the system's trusted CAs (package ca-certificates).
constexpr const char* system_ca_bundle = "/etc/ssl/certs/ca-certificates.crt";

timeval to_timeval(std::chrono::milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(d.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((d.count() % 1000) * 1000);
  return tv;
}

amqp_table_entry_t string_entry(const char* key, const std::string& value) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_bytes_t{value.size(), const_cast<char*>(value.data())};
  return e;
}

amqp_table_entry_t bool_entry(const char* key) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_BOOLEAN;
  e.value.value.boolean = 1;
  return e;
}

bool is_tls_status(int status) {
  return status <= AMQP_STATUS_SSL_ERROR && status > _AMQP_STATUS_SSL_NEXT_VALUE;
}

// Why a connect failed, in words an operator can act on.
std::string connect_hint(const rabbitmq_settings& s, int status) {
  switch (status) {
    case AMQP_STATUS_SSL_PEER_VERIFY_FAILED:
    case AMQP_STATUS_SSL_CONNECTION_FAILED:
    case AMQP_STATUS_SSL_ERROR:
      return " (the TLS handshake failed: is the broker's certificate signed by a CA in '"
             + (s.ca_cert_file.empty() ? std::string(system_ca_bundle) : s.ca_cert_file)
             + "', and is the port a TLS port?)";
    case AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED:
      return " (the broker's certificate is not issued for '" + s.host + "')";
    case AMQP_STATUS_TIMEOUT:
      return " (no answer within " + std::to_string(s.connect_timeout.count()) + " ms)";
    case AMQP_STATUS_SOCKET_ERROR:
    case AMQP_STATUS_TCP_ERROR:
      return " (is the broker running and listening on port " + std::to_string(s.port) + "?)";
    case AMQP_STATUS_HOSTNAME_RESOLUTION_FAILED:
      return " (unknown host '" + s.host + "')";
    default:
      return {};
  }
}

} // namespace

std::string library_error_text(int status) {
  return amqp_error_string2(status);
}

std::string describe(const amqp_failure& f) {
  if (f.reply_code == 0)
    return f.text;
  return std::to_string(f.reply_code) + " " + f.text;
}

error to_error(const amqp_failure& f, const std::string& context) {
  errc code = errc::transport_failure;
  switch (f.reply_code) {
    case AMQP_NOT_FOUND:
      code = errc::unknown_queue;
      break;
    case AMQP_ACCESS_REFUSED:
    case AMQP_RESOURCE_LOCKED:
    case AMQP_PRECONDITION_FAILED:
      code = errc::invalid_configuration;
      break;
    default:
      break;
  }
  return error{code, context + ": " + describe(f)};
}

result<std::unique_ptr<amqp_session>> amqp_session::open(const rabbitmq_settings& settings,
                                                         const std::string& role) {
  // Failover: every node in the settings' order, the first that logs in
  // wins. A refused node costs a refused TCP connect; one that does not
  // answer costs connect_timeout. Nothing else changes between nodes, so
  // the caller's backoff runs between whole rounds, not between nodes.
  auto nodes = settings.nodes();
  if (nodes.size() == 1)
    return open_node(settings, role);
  std::string failures;
  for (const auto& node : nodes) {
    auto one = settings;
    one.host = node.host;
    one.port = node.port;
    one.failover_nodes.clear();
    auto opened = open_node(one, role);
    if (opened)
      return opened;
    // A refused login or a bad certificate would be the same on every node
    // of the cluster; still, the next one may be configured differently.
    failures += (failures.empty() ? "" : "; ") + opened.error().message;
  }
  return error{errc::transport_failure,
               "no node of the cluster " + settings.describe() + " took the connection: " + failures};
}

result<std::unique_ptr<amqp_session>> amqp_session::open_node(const rabbitmq_settings& s,
                                                              const std::string& role) {
  auto where = "RabbitMQ at " + s.describe();
  auto fail = [&](amqp_connection_state_t conn,
                  std::string why) -> result<std::unique_ptr<amqp_session>> {
    if (conn)
      amqp_destroy_connection(conn);
    return error{errc::transport_failure, where + ": " + why};
  };

  amqp_connection_state_t conn = amqp_new_connection();
  if (!conn)
    return fail(nullptr, "out of memory for a connection");
  amqp_socket_t* socket = nullptr;
  if (s.tls) {
    socket = amqp_ssl_socket_new(conn);
    if (!socket)
      return fail(conn, "cannot create a TLS socket (OpenSSL failed to initialise)");
    amqp_ssl_socket_set_verify_peer(socket, s.verify_peer ? 1 : 0);
    amqp_ssl_socket_set_verify_hostname(socket, s.verify_hostname ? 1 : 0);
    if (s.verify_peer) {
      auto ca = s.ca_cert_file.empty() ? std::string(system_ca_bundle) : s.ca_cert_file;
      if (amqp_ssl_socket_set_cacert(socket, ca.c_str()) != AMQP_STATUS_OK)
        return fail(conn, "cannot load CA certificates from '" + ca
                              + "' (missing, unreadable or not PEM)");
    }
    if (!s.client_cert_file.empty()
        && amqp_ssl_socket_set_key(socket, s.client_cert_file.c_str(), s.client_key_file.c_str())
               != AMQP_STATUS_OK)
      return fail(conn, "cannot load the client certificate '" + s.client_cert_file + "' with key '"
                            + s.client_key_file + "'");
  } else {
    socket = amqp_tcp_socket_new(conn);
    if (!socket)
      return fail(conn, "cannot create a TCP socket");
  }

  auto connect_tv = to_timeval(s.connect_timeout);
  int status = amqp_socket_open_noblock(socket, s.host.c_str(), s.port, &connect_tv);
  if (status != AMQP_STATUS_OK)
    return fail(conn, std::string(s.tls && is_tls_status(status) ? "TLS connection refused: "
                                                                 : "cannot connect: ")
                          + library_error_text(status) + connect_hint(s, status));

  amqp_set_handshake_timeout(conn, &connect_tv);
  auto rpc_tv = to_timeval(s.operation_timeout);
  amqp_set_rpc_timeout(conn, &rpc_tv);

  // Client properties: a name to find the connection by, and the
  // capabilities rabbitmq-c does not announce itself (its own defaults,
  // authentication_failure_close among them, are merged in): a basic.cancel
  // when a consumed queue is deleted, connection.blocked under a memory alarm.
  std::string name = s.connection_name + " " + role;
  std::array<amqp_table_entry_t, 2> capabilities{bool_entry("consumer_cancel_notify"),
                                                 bool_entry("connection.blocked")};
  std::array<amqp_table_entry_t, 2> props{string_entry("connection_name", name), {}};
  props[1].key = amqp_cstring_bytes("capabilities");
  props[1].value.kind = AMQP_FIELD_KIND_TABLE;
  props[1].value.value.table =
      amqp_table_t{static_cast<int>(capabilities.size()), capabilities.data()};
  amqp_table_t properties{static_cast<int>(props.size()), props.data()};

  auto heartbeat = static_cast<int>(s.heartbeat.count());
  amqp_rpc_reply_t reply = amqp_login_with_properties(
      conn, s.vhost.c_str(), /*channel_max=*/0, /*frame_max=*/131072, heartbeat, &properties,
      AMQP_SASL_METHOD_PLAIN, s.user.c_str(), s.password.c_str());
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      break;
    case AMQP_RESPONSE_SERVER_EXCEPTION: {
      std::string text = "the broker closed the connection during login";
      std::uint16_t code = 0;
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
        code = close->reply_code;
        text = text_of(close->reply_text);
      }
      if (code == AMQP_ACCESS_REFUSED)
        return fail(conn, "login refused for user '" + s.user + "' (wrong user or password?): "
                              + std::to_string(code) + " " + text);
      if (code == AMQP_NOT_ALLOWED)
        return fail(conn, "user '" + s.user + "' may not use vhost '" + s.vhost
                              + "' (does it exist?): " + std::to_string(code) + " " + text);
      return fail(conn, "login failed: " + std::to_string(code) + " " + text);
    }
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      if (reply.library_error == AMQP_STATUS_TIMEOUT)
        return fail(conn, "no answer to the AMQP login within "
                              + std::to_string(s.connect_timeout.count())
                              + " ms (is this an AMQP port, and is the broker responsive?)");
      return fail(conn, "login failed: " + library_error_text(reply.library_error)
                            + (s.tls ? "" : " (is this a TLS port? then use amqps://)"));
    case AMQP_RESPONSE_NONE:
      return fail(conn, "login failed: no reply from the broker");
  }
  return std::unique_ptr<amqp_session>(new amqp_session(conn));
}

amqp_session::~amqp_session() {
  if (alive_)
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS); // best effort: the broker requeues unacked
  amqp_destroy_connection(conn_);
}

int amqp_session::fd() const noexcept {
  return amqp_get_sockfd(conn_);
}

amqp_channel_t amqp_session::new_channel_number() noexcept {
  auto max = amqp_get_channel_max(conn_);
  if (max == 0)
    max = 65535;
  if (next_channel_ == 0 || next_channel_ > max)
    return 0;
  return next_channel_++;
}

amqp_status amqp_session::open_channel(amqp_channel_t ch) {
  amqp_channel_open(conn_, ch);
  return rpc_status(ch);
}

amqp_failure amqp_session::die(amqp_failure f) {
  f.scope = failure_scope::connection;
  if (alive_) {
    alive_ = false;
    death_ = f;
  }
  return f;
}

amqp_failure amqp_session::kill(std::string why) {
  return die(amqp_failure{failure_scope::connection, 0, std::move(why)});
}

amqp_status amqp_session::rpc_status(amqp_channel_t ch) {
  amqp_rpc_reply_t reply = amqp_get_rpc_reply(conn_);
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return std::nullopt;
    case AMQP_RESPONSE_NONE:
      return die(amqp_failure{failure_scope::connection, 0, "no reply from the broker"});
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return die(
          amqp_failure{failure_scope::connection, 0, library_error_text(reply.library_error)});
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      break;
  }
  if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
    amqp_failure f{failure_scope::channel, close->reply_code, text_of(close->reply_text)};
    amqp_channel_close_ok_t ok{};
    if (amqp_send_method(conn_, ch, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) < 0)
      return die(f);
    return f;
  }
  if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
    amqp_connection_close_ok_t ok{};
    amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
    return die(
        amqp_failure{failure_scope::connection, close->reply_code, text_of(close->reply_text)});
  }
  return die(amqp_failure{failure_scope::connection, 0,
                          "unexpected reply method " + std::to_string(reply.reply.id)});
}

amqp_status amqp_session::call_status(int status) {
  if (status >= 0)
    return std::nullopt;
  return die(amqp_failure{failure_scope::connection, 0, library_error_text(status)});
}

bool amqp_session::poll_frame(amqp_frame_t& frame) {
  if (!alive_)
    return false;
  timeval zero{0, 0};
  int status = amqp_simple_wait_frame_noblock(conn_, &frame, &zero);
  if (status == AMQP_STATUS_OK)
    return true;
  if (status != AMQP_STATUS_TIMEOUT)
    die(amqp_failure{failure_scope::connection, 0, library_error_text(status)});
  return false;
}

amqp_status amqp_session::read_content(amqp_channel_t ch, amqp_message_t& out) {
  amqp_rpc_reply_t reply = amqp_read_message(conn_, ch, &out, 0);
  if (reply.reply_type == AMQP_RESPONSE_NORMAL)
    return std::nullopt;
  if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    return die(amqp_failure{failure_scope::connection, 0,
                            "reading a message: " + library_error_text(reply.library_error)});
  return die(amqp_failure{failure_scope::connection, 0, "reading a message: protocol error"});
}

amqp_failure amqp_session::channel_closed_by_broker(const amqp_frame_t& frame) {
  auto* close = static_cast<amqp_channel_close_t*>(frame.payload.method.decoded);
  amqp_failure f{failure_scope::channel, close->reply_code, text_of(close->reply_text)};
  amqp_channel_close_ok_t ok{};
  if (amqp_send_method(conn_, frame.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) < 0)
    return die(f);
  return f;
}

amqp_failure amqp_session::connection_closed_by_broker(const amqp_frame_t& frame) {
  auto* close = static_cast<amqp_connection_close_t*>(frame.payload.method.decoded);
  amqp_failure f{failure_scope::connection, close->reply_code, text_of(close->reply_text)};
  amqp_connection_close_ok_t ok{};
  amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
  return die(f);
}

void wait_readable(int fd, int wake_fd, std::chrono::milliseconds timeout) {
  std::array<pollfd, 2> fds{};
  nfds_t n = 0;
  if (wake_fd >= 0)
    fds[n++] = pollfd{wake_fd, POLLIN, 0};
  if (fd >= 0)
    fds[n++] = pollfd{fd, POLLIN, 0};
  auto ms =
      timeout.count() < 0 ? 0 : static_cast<int>(std::min<std::int64_t>(timeout.count(), 60000));
  ::poll(fds.data(), n, ms);
}

} // namespace bus::detail
