#include "raw_amqp.hpp"

#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

#include <stdexcept>
#include <vector>

namespace bench {

namespace {

amqp_bytes_t bytes_of(const std::string& s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}

std::string text_of(amqp_bytes_t b) {
  return std::string(static_cast<const char*>(b.bytes), b.len);
}

} // namespace

raw_amqp::raw_amqp(const std::string& url) {
  std::vector<char> buffer(url.begin(), url.end());
  buffer.push_back('\0');
  amqp_connection_info info{};
  amqp_default_connection_info(&info);
  if (amqp_parse_url(buffer.data(), &info) != AMQP_STATUS_OK)
    throw std::runtime_error("raw rabbitmq-c: cannot parse the broker URL");
  // amqp_parse_url reads "amqp://host:port/" as the vhost "", which the
  // broker refuses; the transport (and the AMQP URI spec) reads it as "/".
  std::string vhost = info.vhost && *info.vhost ? info.vhost : "/";
  conn_ = amqp_new_connection();
  auto* socket = amqp_tcp_socket_new(conn_);
  if (!socket || amqp_socket_open(socket, info.host, info.port) != AMQP_STATUS_OK) {
    amqp_destroy_connection(conn_);
    throw std::runtime_error("raw rabbitmq-c: cannot connect to the broker");
  }
  // The transport's frame size and heartbeat setting (it uses 60 s by
  // default; heartbeats cost nothing at this rate either way).
  check(amqp_login(conn_, vhost.c_str(), 0, 131072, 60, AMQP_SASL_METHOD_PLAIN, info.user,
                   info.password),
        "login");
  amqp_channel_open(conn_, 1);
  check(amqp_get_rpc_reply(conn_), "channel.open");
}

raw_amqp::~raw_amqp() {
  amqp_channel_close(conn_, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn_);
}

void raw_amqp::check(amqp_rpc_reply_t reply, const char* what) {
  if (reply.reply_type == AMQP_RESPONSE_NORMAL)
    return;
  std::string why = reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION
                        ? amqp_error_string2(reply.library_error)
                        : "the broker refused it";
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION
      && reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
    why = std::to_string(close->reply_code) + " " + text_of(close->reply_text);
  }
  throw std::runtime_error(std::string("raw rabbitmq-c: ") + what + ": " + why);
}

void raw_amqp::declare_queue(const std::string& queue) {
  amqp_queue_declare(conn_, 1, bytes_of(queue), /*passive=*/0, /*durable=*/1, /*exclusive=*/0,
                     /*auto_delete=*/0, amqp_empty_table);
  check(amqp_get_rpc_reply(conn_), "queue.declare");
}

void raw_amqp::delete_queue(const std::string& queue) {
  amqp_queue_delete(conn_, 1, bytes_of(queue), /*if_unused=*/0, /*if_empty=*/0);
  check(amqp_get_rpc_reply(conn_), "queue.delete");
}

void raw_amqp::confirm_select() {
  amqp_confirm_select(conn_, 1);
  check(amqp_get_rpc_reply(conn_), "confirm.select");
}

void raw_amqp::publish(const std::string& queue, const amqp_payload& m) {
  // The same header table the transport builds for each publish.
  std::vector<amqp_table_entry_t> entries;
  entries.reserve(m.headers.size());
  for (const auto& [name, value] : m.headers) {
    amqp_table_entry_t e{};
    e.key = bytes_of(name);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = bytes_of(value);
    entries.push_back(e);
  }
  amqp_basic_properties_t p{};
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.content_type = amqp_cstring_bytes("application/json");
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  int status = amqp_basic_publish(conn_, 1, amqp_empty_bytes, bytes_of(queue), /*mandatory=*/1,
                                  /*immediate=*/0, &p, bytes_of(m.body));
  if (status != AMQP_STATUS_OK)
    throw std::runtime_error(std::string("raw rabbitmq-c: publish: ")
                             + amqp_error_string2(status));
  pending_.insert(next_tag_++);
}

void raw_amqp::await_confirms(std::size_t left) {
  while (pending_.size() > left) {
    amqp_maybe_release_buffers(conn_);
    amqp_frame_t frame;
    timeval timeout{30, 0};
    int status = amqp_simple_wait_frame_noblock(conn_, &frame, &timeout);
    if (status != AMQP_STATUS_OK)
      throw std::runtime_error(std::string("raw rabbitmq-c: waiting for confirms: ")
                               + amqp_error_string2(status));
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue;
    switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
        if (ack->multiple)
          pending_.erase(pending_.begin(), pending_.upper_bound(ack->delivery_tag));
        else
          pending_.erase(ack->delivery_tag);
        break;
      }
      case AMQP_BASIC_NACK_METHOD:
        throw std::runtime_error("raw rabbitmq-c: the broker refused a message (basic.nack)");
      case AMQP_BASIC_RETURN_METHOD:
        throw std::runtime_error("raw rabbitmq-c: a message was returned (no such queue)");
      case AMQP_CHANNEL_CLOSE_METHOD:
      case AMQP_CONNECTION_CLOSE_METHOD:
        throw std::runtime_error("raw rabbitmq-c: the broker closed the channel");
      default:
        break;
    }
  }
}

void raw_amqp::consume(const std::string& queue, std::uint16_t prefetch, std::uint64_t messages,
                       const std::function<void(amqp_bytes_t)>& on_message,
                       std::uint64_t ack_every) {
  if (ack_every == 0)
    ack_every = 1;
  amqp_basic_qos(conn_, 1, 0, prefetch, /*global=*/0);
  check(amqp_get_rpc_reply(conn_), "basic.qos");
  amqp_basic_consume(conn_, 1, bytes_of(queue), amqp_empty_bytes, /*no_local=*/0, /*no_ack=*/0,
                     /*exclusive=*/0, amqp_empty_table);
  check(amqp_get_rpc_reply(conn_), "basic.consume");
  for (std::uint64_t acked = 0; acked < messages;) {
    amqp_maybe_release_buffers(conn_);
    amqp_envelope_t env;
    timeval timeout{30, 0};
    auto reply = amqp_consume_message(conn_, &env, &timeout, 0);
    check(reply, "consuming");
    on_message(env.message.body);
    ++acked;
    int status = AMQP_STATUS_OK;
    if (ack_every == 1)
      status = amqp_basic_ack(conn_, 1, env.delivery_tag, /*multiple=*/0);
    else if (acked % ack_every == 0 || acked == messages)
      status = amqp_basic_ack(conn_, 1, env.delivery_tag, /*multiple=*/1);
    amqp_destroy_envelope(&env);
    if (status != AMQP_STATUS_OK)
      throw std::runtime_error(std::string("raw rabbitmq-c: ack: ") + amqp_error_string2(status));
  }
}

void raw_fill_queue(const std::string& url, const std::string& queue, std::uint64_t messages,
                    std::size_t window, const std::function<amqp_payload(std::uint64_t)>& make) {
  raw_amqp c(url);
  c.confirm_select();
  for (std::uint64_t i = 0; i < messages; ++i) {
    c.publish(queue, make(i));
    if (c.unconfirmed() >= window)
      c.await_confirms(window / 2);
  }
  c.await_confirms(0);
}

} // namespace bench
