// A foreign publisher: puts a message on a queue with rabbitmq-c directly,
// with whatever headers and body a test wants, as a client that knows
// nothing of the bus would. Waits for the broker's confirm, so the message
// is in the queue when it returns. And a foreign reader (raw_get) that
// sees the broker's own headers, x-death among them.
#pragma once

#include <catch2/catch.hpp>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bus/rabbitmq_settings.hpp"

namespace bus::test {

struct raw_message {
  std::vector<std::pair<std::string, std::string>> headers; // sent as UTF-8 strings
  std::string message_id;                                   // empty: no message-id property
  std::string body;
  // The other basic properties a foreign producer may set; empty (0): unset.
  std::string type, correlation_id, reply_to, content_type, expiration;
  std::uint64_t timestamp = 0; // Unix seconds
  // Where it is published: the default exchange (the routing key is the
  // queue raw_publish is given) unless an exchange is named.
  std::string exchange, routing_key;
};

// A message with only headers, an AMQP message-id (if not empty) and a body.
inline raw_message raw_with(std::vector<std::pair<std::string, std::string>> headers,
                            std::string message_id, std::string body) {
  raw_message m;
  m.headers = std::move(headers);
  m.message_id = std::move(message_id);
  m.body = std::move(body);
  return m;
}

// FAILs the test when a raw call did not succeed.
inline void raw_check(amqp_rpc_reply_t r, const char* what) {
  if (r.reply_type != AMQP_RESPONSE_NORMAL)
    FAIL("raw client: " << what << " failed (reply type " << r.reply_type << ")");
}

// A connection to the broker of `s`, logged in, with channel 1 open.
inline amqp_connection_state_t raw_connect(const rabbitmq_settings& s) {
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  REQUIRE(amqp_socket_open(socket, s.host.c_str(), s.port) == AMQP_STATUS_OK);
  raw_check(amqp_login(conn, s.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                       s.user.c_str(), s.password.c_str()),
            "login");
  amqp_channel_open(conn, 1);
  raw_check(amqp_get_rpc_reply(conn), "channel.open");
  return conn;
}

inline void raw_publish(const rabbitmq_settings& s, const std::string& queue,
                        const raw_message& m) {
  amqp_connection_state_t conn = raw_connect(s);
  amqp_confirm_select(conn, 1);
  raw_check(amqp_get_rpc_reply(conn), "confirm.select");

  std::vector<amqp_table_entry_t> entries;
  for (const auto& [name, value] : m.headers) {
    amqp_table_entry_t e{};
    e.key = amqp_cstring_bytes(name.c_str());
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_cstring_bytes(value.c_str());
    entries.push_back(e);
  }
  amqp_basic_properties_t p{};
  p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  auto text = [&p](const std::string& value, amqp_flags_t flag, amqp_bytes_t& field) {
    if (value.empty())
      return;
    p._flags |= flag;
    field = amqp_cstring_bytes(value.c_str());
  };
  text(m.message_id, AMQP_BASIC_MESSAGE_ID_FLAG, p.message_id);
  text(m.type, AMQP_BASIC_TYPE_FLAG, p.type);
  text(m.correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG, p.correlation_id);
  text(m.reply_to, AMQP_BASIC_REPLY_TO_FLAG, p.reply_to);
  text(m.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG, p.content_type);
  text(m.expiration, AMQP_BASIC_EXPIRATION_FLAG, p.expiration);
  if (m.timestamp != 0) {
    p._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    p.timestamp = m.timestamp;
  }
  amqp_bytes_t body{m.body.size(), const_cast<char*>(m.body.data())};
  const auto& key = m.exchange.empty() ? queue : m.routing_key;
  REQUIRE(amqp_basic_publish(conn, 1, amqp_cstring_bytes(m.exchange.c_str()),
                             amqp_cstring_bytes(key.c_str()), 1, 0, &p, body)
          == AMQP_STATUS_OK);
  for (;;) {
    amqp_frame_t frame;
    timeval timeout{10, 0};
    REQUIRE(amqp_simple_wait_frame_noblock(conn, &frame, &timeout) == AMQP_STATUS_OK);
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue;
    REQUIRE(frame.payload.method.id != AMQP_BASIC_RETURN_METHOD); // the queue must exist
    if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD)
      break;
  }
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

// An exchange `exchange` of `kind` (declared if missing) bound to `queue` with
// `binding_key`, as a foreign system's routing would be.
inline void raw_bind(const rabbitmq_settings& s, const std::string& exchange,
                     const std::string& queue, const std::string& binding_key,
                     const char* kind = "topic") {
  amqp_connection_state_t conn = raw_connect(s);
  amqp_exchange_declare(conn, 1, amqp_cstring_bytes(exchange.c_str()), amqp_cstring_bytes(kind),
                        0, /*durable=*/1, /*auto_delete=*/0, 0, amqp_empty_table);
  raw_check(amqp_get_rpc_reply(conn), "exchange.declare");
  amqp_queue_bind(conn, 1, amqp_cstring_bytes(queue.c_str()), amqp_cstring_bytes(exchange.c_str()),
                  amqp_cstring_bytes(binding_key.c_str()), amqp_empty_table);
  raw_check(amqp_get_rpc_reply(conn), "queue.bind");
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

// Declares delay level queue `name` as a bus before the balanced placement
// did: the same arguments, without x-queue-leader-locator.
inline void raw_declare_unplaced_level(const rabbitmq_settings& s, const std::string& name,
                                       std::int64_t ttl_ms, const std::string& next_exchange) {
  amqp_connection_state_t conn = raw_connect(s);
  auto text = [](const char* key, const std::string& value) {
    amqp_table_entry_t e{};
    e.key = amqp_cstring_bytes(key);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = amqp_bytes_t{value.size(), const_cast<char*>(value.data())};
    return e;
  };
  std::string quorum = "quorum", at_least_once = "at-least-once", reject = "reject-publish";
  std::vector<amqp_table_entry_t> entries{
      text("x-queue-type", quorum), text("x-dead-letter-exchange", next_exchange),
      text("x-dead-letter-strategy", at_least_once), text("x-overflow", reject)};
  amqp_table_entry_t ttl{};
  ttl.key = amqp_cstring_bytes("x-message-ttl");
  ttl.value.kind = AMQP_FIELD_KIND_I64;
  ttl.value.value.i64 = ttl_ms;
  entries.push_back(ttl);
  amqp_queue_declare(conn, 1, amqp_bytes_t{name.size(), const_cast<char*>(name.data())}, 0, 1, 0, 0,
                     amqp_table_t{static_cast<int>(entries.size()), entries.data()});
  raw_check(amqp_get_rpc_reply(conn), "queue.declare");
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

// What a foreign reader sees of a message: the broker's own headers (the
// transport hides every x- header), as text; integers printed in decimal.
struct raw_got {
  bool found = false;
  std::string message_id;
  std::string content_type;
  std::string correlation_id;
  std::string body;
  std::map<std::string, std::string> headers; // top level, strings and integers
  std::vector<std::string> death_reasons;     // x-death[i].reason, newest first
  std::vector<std::string> death_queues;      // x-death[i].queue
};

// basic.get of one message from `queue`, acknowledged (removed) if `ack`,
// else requeued. Waits for nothing: found is false on an empty queue.
inline raw_got raw_get(const rabbitmq_settings& s, const std::string& queue, bool ack) {
  auto text = [](amqp_bytes_t b) { return std::string(static_cast<char*>(b.bytes), b.len); };
  auto value_text = [&](const amqp_field_value_t& v) -> std::string {
    switch (v.kind) {
      case AMQP_FIELD_KIND_UTF8:
      case AMQP_FIELD_KIND_BYTES:
        return text(v.value.bytes);
      case AMQP_FIELD_KIND_I64:
        return std::to_string(v.value.i64);
      case AMQP_FIELD_KIND_I32:
        return std::to_string(v.value.i32);
      case AMQP_FIELD_KIND_U64:
        return std::to_string(v.value.u64);
      default:
        return "<kind " + std::to_string(v.kind) + ">";
    }
  };
  amqp_connection_state_t conn = raw_connect(s);
  raw_got out;
  amqp_rpc_reply_t got = amqp_basic_get(conn, 1, amqp_cstring_bytes(queue.c_str()), /*no_ack=*/0);
  raw_check(got, "basic.get");
  if (got.reply.id == AMQP_BASIC_GET_OK_METHOD) {
    auto tag = static_cast<amqp_basic_get_ok_t*>(got.reply.decoded)->delivery_tag;
    amqp_message_t m;
    raw_check(amqp_read_message(conn, 1, &m, 0), "reading the message");
    out.found = true;
    const auto& p = m.properties;
    if (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
      out.message_id = text(p.message_id);
    if (p._flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
      out.content_type = text(p.content_type);
    if (p._flags & AMQP_BASIC_CORRELATION_ID_FLAG)
      out.correlation_id = text(p.correlation_id);
    out.body = text(m.body);
    if (p._flags & AMQP_BASIC_HEADERS_FLAG) {
      for (int i = 0; i < p.headers.num_entries; ++i) {
        const auto& e = p.headers.entries[i];
        auto key = text(e.key);
        if (key == "x-death" && e.value.kind == AMQP_FIELD_KIND_ARRAY) {
          const auto& deaths = e.value.value.array;
          for (int d = 0; d < deaths.num_entries; ++d) {
            if (deaths.entries[d].kind != AMQP_FIELD_KIND_TABLE)
              continue;
            const auto& death = deaths.entries[d].value.table;
            for (int f = 0; f < death.num_entries; ++f) {
              auto field = text(death.entries[f].key);
              if (field == "reason")
                out.death_reasons.push_back(value_text(death.entries[f].value));
              else if (field == "queue")
                out.death_queues.push_back(value_text(death.entries[f].value));
            }
          }
        } else {
          out.headers[key] = value_text(e.value);
        }
      }
    }
    amqp_destroy_message(&m);
    if (ack)
      REQUIRE(amqp_basic_ack(conn, 1, tag, 0) == AMQP_STATUS_OK);
    else
      REQUIRE(amqp_basic_reject(conn, 1, tag, /*requeue=*/1) == AMQP_STATUS_OK);
  }
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return out;
}

} // namespace bus::test
