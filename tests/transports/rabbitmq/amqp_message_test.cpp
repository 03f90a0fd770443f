// Envelopes from AMQP messages, without a broker: a bus message comes back
// whole; anything else still becomes an envelope that says what is wrong.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "amqp_message.hpp"
#include "bus/deadline.hpp"
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
  std::vector<std::unique_ptr<std::string>> texts; // the properties' bytes, stable
  amqp_basic_properties_t props{};
  bus::detail::amqp_origin origin{"", "orders"};

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
  // A text property of the basic class: type, correlation-id, reply-to, ...
  amqp_input& property(amqp_flags_t flag, amqp_bytes_t amqp_basic_properties_t::*field,
                       std::string value) {
    texts.push_back(std::make_unique<std::string>(std::move(value)));
    props._flags |= flag;
    props.*field = bytes(*texts.back());
    return *this;
  }
  amqp_input& timestamp(std::uint64_t seconds) {
    props._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    props.timestamp = seconds;
    return *this;
  }
  amqp_input& from(std::string exchange, std::string routing_key) {
    origin = {std::move(exchange), std::move(routing_key)};
    return *this;
  }
  bus::envelope decode() {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      entries[i].key = bytes(keys[i]);
      if (entries[i].value.kind == AMQP_FIELD_KIND_UTF8)
        entries[i].value.value.bytes = bytes(values[i]);
    }
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    props.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
    if (!message_id_text.empty()) {
      props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
      props.message_id = bytes(message_id_text);
    }
    return bus::detail::envelope_from_amqp(props, bytes(body_text), origin, 1, 2);
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
  CHECK_THAT(wire_error(env), Catch::Contains("no bus-message-type header and no AMQP type"));
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

TEST_CASE("a message with only AMQP properties is read from them: id, type, correlation, "
          "reply-to, time sent and expiry",
          "[rabbitmq][wire][foreign]") {
  using props = amqp_basic_properties_t;
  auto env = amqp_input{}
               .message_id("legacy-8")
               .property(AMQP_BASIC_TYPE_FLAG, &props::type, "order_placed")
               .property(AMQP_BASIC_CORRELATION_ID_FLAG, &props::correlation_id, "conv-1")
               .property(AMQP_BASIC_REPLY_TO_FLAG, &props::reply_to, "legacy.replies")
               .property(AMQP_BASIC_CONTENT_TYPE_FLAG, &props::content_type, "application/json")
               .property(AMQP_BASIC_EXPIRATION_FLAG, &props::expiration, "60000")
               .timestamp(1767225600)
               .header("tenant", "acme")
               .from("legacy.events", "orders.placed")
               .body(R"({"order_id":"o-1","amount":3})")
               .decode();
  CHECK(env.message_id == "legacy-8");
  CHECK(env.message_type == "order_placed");
  CHECK(env.correlation_id == "conv-1");
  CHECK(env.response_address == "legacy.replies");
  CHECK(env.sent_at == bus::from_unix_ms(1767225600000));
  // A time to live counts from when it was sent.
  CHECK(bus::expires_at(env) == bus::from_unix_ms(1767225660000));
  CHECK(env.body.to_json_text().value() == R"({"order_id":"o-1","amount":3})");
  CHECK(wire_error(env).empty()); // a valid message, if not one of ours
  // Where it came from and what it said, for a type mapping and for operators.
  namespace h = bus::header;
  CHECK(env.headers.find(h::amqp_exchange) == std::optional<std::string_view>("legacy.events"));
  CHECK(env.headers.find(h::amqp_routing_key) == std::optional<std::string_view>("orders.placed"));
  CHECK(env.headers.find(h::amqp_type) == std::optional<std::string_view>("order_placed"));
  CHECK(env.headers.find(h::amqp_content_type) == std::optional<std::string_view>("application/json"));
  CHECK(env.headers.find("tenant") == std::optional<std::string_view>("acme"));
}

TEST_CASE("a foreign message without a type says what was looked at", "[rabbitmq][wire][foreign]") {
  auto env = amqp_input{}.message_id("legacy-9").from("", "billing").body("{}").decode();
  CHECK(env.message_type.empty());
  CHECK_THAT(wire_error(env), Catch::Contains("no bus-message-type header")
                                && Catch::Contains("no AMQP type property")
                                && Catch::Contains("routing key 'billing'"));
}

TEST_CASE("an expiration that is not a number of milliseconds is left to the broker",
          "[rabbitmq][wire][foreign]") {
  using props = amqp_basic_properties_t;
  auto env = amqp_input{}
               .message_id("legacy-10")
               .property(AMQP_BASIC_TYPE_FLAG, &props::type, "order_placed")
               .property(AMQP_BASIC_EXPIRATION_FLAG, &props::expiration, "soon")
               .timestamp(1767225600)
               .decode();
  CHECK(env.message_type == "order_placed");
  CHECK_FALSE(bus::expires_at(env));
  // Without a time sent, the broker's own expiry is all there is.
  auto unsent = amqp_input{}
                  .message_id("legacy-11")
                  .property(AMQP_BASIC_TYPE_FLAG, &props::type, "order_placed")
                  .property(AMQP_BASIC_EXPIRATION_FLAG, &props::expiration, "60000")
                  .decode();
  CHECK_FALSE(bus::expires_at(unsent));
}
