// Envelopes from AMQP messages, without a broker: a bus message comes back
// whole; anything else still becomes an envelope that says what is wrong.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "amqp_message.hpp"
#include "bus/header_names.hpp"
#include "bus/rabbitmq_transport.hpp"

namespace {

amqp_bytes_t bytes(const std::string& s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}

// An AMQP message under construction; owns what its tables point at.
struct amqp_input {
  std::vector<std::string> keys, values;
  std::vector<amqp_table_entry_t> entries;
  std::string message_id_text, body_text;
  amqp_basic_properties_t props{};

  amqp_input& header(std::string key, std::string value) {
    keys.push_back(std::move(key));
    values.push_back(std::move(value));
    amqp_table_entry_t e{};
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    entries.push_back(e);
    return *this;
  }
  amqp_input& int_header(std::string key, std::int64_t value) {
    keys.push_back(std::move(key));
    values.emplace_back();
    amqp_table_entry_t e{};
    e.value.kind = AMQP_FIELD_KIND_I64;
    e.value.value.i64 = value;
    entries.push_back(e);
    return *this;
  }
  amqp_input& message_id(std::string id) {
    message_id_text = std::move(id);
    return *this;
  }
  amqp_input& body(std::string b) {
    body_text = std::move(b);
    return *this;
  }
  bus::envelope decode() {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      entries[i].key = bytes(keys[i]);
      if (entries[i].value.kind == AMQP_FIELD_KIND_UTF8)
        entries[i].value.value.bytes = bytes(values[i]);
    }
    props._flags = AMQP_BASIC_HEADERS_FLAG;
    props.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
    if (!message_id_text.empty()) {
      props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
      props.message_id = bytes(message_id_text);
    }
    return bus::detail::envelope_from_amqp(props, bytes(body_text), 1, 2);
  }
};

std::string wire_error(const bus::envelope& env) {
  return std::string(env.headers.find(bus::rabbitmq_wire_error_header).value_or(""));
}

} // namespace

TEST_CASE("a bus message comes back with its fields and user headers and nothing else",
          "[rabbitmq][wire]") {
  auto env = amqp_input{}
                 .header("bus-message-id", "m-1")
                 .header("bus-message-type", "order_placed")
                 .header("bus-sent-at", "1767225600123")
                 .header("bus-delivery-count", "2")
                 .header("tenant", "acme")
                 .int_header("priority", 7)
                 .int_header("x-delivery-count", 3)
                 .header("x-first-death-queue", "bus.delay.100ms.8.level.00")
                 .body(R"({"order_id":"o-1"})")
                 .decode();
  CHECK(env.message_id == "m-1");
  CHECK(env.message_type == "order_placed");
  CHECK(env.sent_at == bus::from_unix_ms(1767225600123));
  CHECK(env.delivery_count == 2);
  CHECK(env.headers == bus::headers{{"tenant", "acme"}, {"priority", "7"}}); // x-* are the broker's
  CHECK(env.body.to_json_text().value() == R"({"order_id":"o-1"})");
}

TEST_CASE("a message without bus headers is named by its AMQP message id and has no type",
          "[rabbitmq][wire]") {
  auto env = amqp_input{}.header("origin", "legacy").message_id("legacy-7").body("<xml/>").decode();
  CHECK(env.message_id == "legacy-7");
  CHECK(env.message_type.empty());
  CHECK(env.body.to_json_text().value() == "<xml/>");
  CHECK(env.headers.find("origin") == std::optional<std::string_view>("legacy"));
  CHECK_THAT(wire_error(env), Catch::Contains("bus-message-id"));
}

TEST_CASE("a message with nothing to name it by gets a fresh id", "[rabbitmq][wire]") {
  auto env = amqp_input{}.decode();
  CHECK(env.message_id == bus::make_message_id(1, 2));
  CHECK(env.message_type.empty());
  CHECK_FALSE(wire_error(env).empty());
}

TEST_CASE("a broken optional bus header is dropped and reported, the rest is kept",
          "[rabbitmq][wire]") {
  for (std::string sent : {"yesterday", "99999999999999999"}) {
    auto env = amqp_input{}
                   .header("bus-message-id", "m-2")
                   .header("bus-message-type", "order_placed")
                   .header("bus-sent-at", sent)
                   .header("bus-delivery-count", "-1")
                   .header("bus-correlation-id", "c-1")
                   .decode();
    INFO("bus-sent-at " << sent);
    CHECK(env.message_id == "m-2");
    CHECK(env.message_type == "order_placed");
    CHECK(env.correlation_id == "c-1");
    CHECK(env.delivery_count == 0);
    CHECK_THAT(wire_error(env), Catch::Contains("bus-sent-at"));
  }
}
