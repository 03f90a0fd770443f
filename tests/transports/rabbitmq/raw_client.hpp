// A foreign publisher: puts a message on a queue with rabbitmq-c directly,
// with whatever headers and body a test wants, as a client that knows
// nothing of the bus would. Waits for the broker's confirm, so the message
// is in the queue when it returns.
#pragma once

#include <catch2/catch.hpp>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <string>
#include <utility>
#include <vector>

#include "bus/rabbitmq_settings.hpp"

namespace bus::test {

struct raw_message {
  std::vector<std::pair<std::string, std::string>> headers; // sent as UTF-8 strings
  std::string message_id;                                   // empty: no message-id property
  std::string body;
};

inline void raw_publish(const rabbitmq_settings& s, const std::string& queue,
                        const raw_message& m) {
  auto check = [](amqp_rpc_reply_t r, const char* what) {
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
      FAIL("raw client: " << what << " failed (reply type " << r.reply_type << ")");
  };
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  REQUIRE(amqp_socket_open(socket, s.host.c_str(), s.port) == AMQP_STATUS_OK);
  check(amqp_login(conn, s.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, s.user.c_str(),
                   s.password.c_str()),
        "login");
  amqp_channel_open(conn, 1);
  check(amqp_get_rpc_reply(conn), "channel.open");
  amqp_confirm_select(conn, 1);
  check(amqp_get_rpc_reply(conn), "confirm.select");

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
  if (!m.message_id.empty()) {
    p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    p.message_id = amqp_cstring_bytes(m.message_id.c_str());
  }
  amqp_bytes_t body{m.body.size(), const_cast<char*>(m.body.data())};
  REQUIRE(amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 1, 0, &p,
                             body)
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

} // namespace bus::test
