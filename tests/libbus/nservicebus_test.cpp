// A message from NServiceBus read into the bus's envelope, against a golden
// message written down from NServiceBus's own sources (tests/interop/golden/).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "bus/deadline.hpp"
#include "bus/nservicebus.hpp"
#include "interop/golden.hpp"
#include "support/envelope_text.hpp"

namespace nsb = bus::nservicebus;

namespace {

using bus::test::header_or_missing;

nlohmann::json golden_json(const std::string& name) {
  return nlohmann::json::parse(bus::test::golden(name));
}

// The golden message as the RabbitMQ transport hands it over: its headers
// as text, and what it reads from the AMQP properties of a message without
// the bus's headers.
bus::envelope as_received(const nlohmann::json& message) {
  bus::envelope e;
  const auto& p = message["properties"];
  e.message_id = p["message_id"];
  e.message_type = p["type"];
  e.correlation_id = p["correlation_id"];
  e.response_address = p["reply_to"];
  for (const auto& [name, value] : message["headers"].items())
    e.headers.set(name, value.get<std::string>());
  e.body = bus::message_body::text(message["body"].dump());
  return e;
}

nsb::message_names nsb_names(std::vector<std::pair<std::string, std::string>> table) {
  auto made = nsb::message_names::from(table);
  REQUIRE(made);
  return std::move(*made);
}

} // namespace

TEST_CASE("a golden NServiceBus publish reads as its registered type, in its conversation",
          "[nservicebus]") {
  auto received = as_received(golden_json("nservicebus_headers.json"));
  REQUIRE(nsb::is_nservicebus(received));
  auto read = nsb::read_message(received, nsb_names({{"Contracts.OrderPlaced", "order_placed"}}));
  REQUIRE(read);
  CHECK(read->message_id == "8f1b5c2e-3a4d-4e7f-9b1a-b17c00c5a2f1");
  CHECK(read->message_type == "order_placed");
  CHECK(read->correlation_id == "2d55209a-f4fb-4984-84cf-b17c00c5a2f1"); // the conversation
  CHECK(read->response_address == "Sales");
  CHECK(bus::to_iso8601(read->sent_at) == "2024-05-01T12:00:00.123Z");
  CHECK_FALSE(bus::expires_at(*read)); // no TimeToBeReceived
  CHECK(nlohmann::json::parse(*read->body.to_json_text())
        == nlohmann::json({{"OrderId", "o-1"}, {"Amount", 12.5}}));
  CHECK(read->headers.find(nsb::header::message_intent) == std::optional<std::string_view>("Publish"));
}

TEST_CASE("NServiceBus names a type by its enclosed types, first known first, or by the AMQP "
          "type property",
          "[nservicebus]") {
  auto table = nsb_names(
      {{"Contracts.IOrderEvent", "order_event"}, {"Contracts.OrderPlaced", "order_placed"}});
  CHECK(table.registered_of("Contracts.OrderPlaced, Contracts, Version=1.0.0.0, Culture=neutral, "
                            "PublicKeyToken=null;Contracts.IOrderEvent, Contracts, Version=1.0.0.0")
        == "order_placed");
  CHECK(table.registered_of("Contracts.Unknown, Contracts; Contracts.IOrderEvent, Contracts")
        == "order_event");
  CHECK(table.registered_of("Contracts.OrderPlaced") == "order_placed"); // plain names are read too
  CHECK(table.registered_of("Other.Type, Other").empty());

  bus::envelope by_property;
  by_property.message_id = "m-1";
  by_property.message_type = "Contracts.OrderPlaced";
  by_property.headers.set(nsb::header::message_id, "m-1");
  auto read = nsb::read_message(by_property, table);
  REQUIRE(read);
  CHECK(read->message_type == "order_placed");

  CHECK(nsb::exchange_of("Contracts.Orders.OrderPlaced") == "Contracts.Orders:OrderPlaced");
  CHECK_FALSE(nsb::message_names::from({{"Contracts.OrderPlaced, Contracts", "order_placed"}}));
  CHECK_FALSE(nsb::message_names::from({{"A.B", "a"}, {"A.B", "b"}}));
  CHECK_FALSE(nsb::message_names::from({{"", "a"}}));
}

TEST_CASE("NServiceBus's times and time spans, and what is not one", "[nservicebus]") {
  CHECK(nsb::parse_time("2024-05-01 12:00:00:123456 Z") == bus::from_iso8601("2024-05-01T12:00:00.123Z"));
  for (auto bad : {"2024-05-01T12:00:00.123456Z", "2024-05-01 12:00:00:123 Z",
                   "2024-13-01 12:00:00:123456 Z", "2024-05-01 12:00:00:123456Z", ""})
    CHECK_FALSE(nsb::parse_time(bad));
  using namespace std::chrono_literals;
  CHECK(nsb::parse_time_span("00:01:00") == bus::duration(60s));
  CHECK(nsb::parse_time_span("1.02:03:04.5") == bus::duration(26h + 3min + 4s + 500ms));
  CHECK(nsb::parse_time_span("00:00:00.1234567") == bus::duration(123ms));
  for (auto bad : {"-00:01:00", "00:60:00", "1:2", "soon", "00:00:00.", ""})
    CHECK_FALSE(nsb::parse_time_span(bad));

  bus::envelope timed;
  timed.message_id = "m-2";
  timed.headers.set(nsb::header::message_id, "m-2");
  timed.headers.set(nsb::header::time_sent, "2024-05-01 12:00:00:000000 Z");
  timed.headers.set(nsb::header::time_to_be_received, "00:00:30");
  auto read = nsb::read_message(timed, nsb_names({}));
  REQUIRE(read);
  CHECK(bus::expires_at(*read) == bus::from_iso8601("2024-05-01T12:00:30Z"));
  timed.headers.set(nsb::header::time_sent, "yesterday");
  auto broken = nsb::read_message(timed, nsb_names({}));
  REQUIRE_FALSE(broken);
  CHECK(broken.error().code == bus::errc::malformed_message);
  CHECK_THAT(broken.error().message, Catch::Contains("NServiceBus.TimeSent of 'yesterday'"));
}

namespace {

// A message of the bus's own, as endpoint "Sales" publishes it.
bus::envelope published_by_sales() {
  bus::envelope e;
  e.message_id = "8f1b5c2e-3a4d-4e7f-9b1a-b17c00c5a2f1";
  e.message_type = "order_placed";
  e.correlation_id = "2d55209a-f4fb-4984-84cf-b17c00c5a2f1";
  e.sent_at = *bus::from_iso8601("2024-05-01T12:00:00.123Z");
  e.body = bus::message_body::text(R"({"OrderId":"o-1","Amount":12.5})");
  return e;
}

} // namespace

TEST_CASE("what the bus publishes in NServiceBus's convention carries the golden publish's "
          "headers, with their values",
          "[nservicebus]") {
  auto gold = golden_json("nservicebus_headers.json");
  auto out = nsb::with_headers(published_by_sales(), "Contracts.OrderPlaced", nsb::intent::publish,
                               {"Sales", "SALES01"}, nullptr);
  // Every header of the golden publish but NServiceBus's version, its host
  // id and its transport's confirmation id (set by a .NET transport).
  for (const auto& [name, value] : gold["headers"].items()) {
    INFO(name);
    if (name == "NServiceBus.Version" || name == "$.diagnostics.originating.hostid"
        || name == "NServiceBus.Transport.RabbitMQ.ConfirmationId")
      continue;
    if (name == "NServiceBus.TimeSent") // the bus keeps milliseconds: below
      continue;
    if (name == "NServiceBus.EnclosedMessageTypes") // the full name, without the assembly
      CHECK(header_or_missing(out, name)
            == value.get<std::string>().substr(0, value.get<std::string>().find(',')));
    else
      CHECK(header_or_missing(out, name) == value.get<std::string>());
  }
  CHECK(header_or_missing(out, "NServiceBus.TimeSent") == "2024-05-01 12:00:00:123000 Z");
  CHECK_FALSE(out.headers.contains(nsb::header::time_to_be_received));
  CHECK_FALSE(out.headers.contains(nsb::header::related_to)); // sent outside a handler
  CHECK(nsb::publish_exchange(out) == gold["exchange"]);
  // And it reads back as NServiceBus would hand it to the bus.
  auto read = nsb::read_message(out, nsb_names({{"Contracts.OrderPlaced", "order_placed"}}));
  REQUIRE(read);
  CHECK(read->message_type == "order_placed");
  CHECK(read->response_address == "Sales");
  CHECK(read->sent_at == out.sent_at);
}

TEST_CASE("in NServiceBus's convention a reply correlates to the request, a send from a handler "
          "to what the handled message correlated to, and an expiry is a TimeToBeReceived",
          "[nservicebus]") {
  auto request = as_received(golden_json("nservicebus_headers.json"));
  request.message_id = "request-1";
  request.headers.set(std::string(nsb::header::correlation_id), "conversation-root");
  auto reply = published_by_sales();
  reply.message_id = "reply-1";
  auto replied = nsb::with_headers(reply, "Contracts.OrderAccepted", nsb::intent::reply,
                                   {"Billing", "BILLING01"}, &request);
  CHECK(header_or_missing(replied, "NServiceBus.MessageIntent") == "Reply");
  CHECK(header_or_missing(replied, "NServiceBus.CorrelationId") == "request-1");
  CHECK(header_or_missing(replied, "NServiceBus.RelatedTo") == "request-1");
  CHECK(header_or_missing(replied, "NServiceBus.ReplyToAddress") == "Billing");
  CHECK(nsb::publish_exchange(replied).empty()); // a reply is sent, not published

  auto sent = published_by_sales();
  bus::set_expires_at(sent,
                      sent.sent_at + std::chrono::hours(25) + std::chrono::milliseconds(1500));
  auto out = nsb::with_headers(sent, "Contracts.ShipOrder", nsb::intent::send,
                               {"Billing", "BILLING01"}, &request);
  CHECK(header_or_missing(out, "NServiceBus.MessageIntent") == "Send");
  CHECK(header_or_missing(out, "NServiceBus.CorrelationId") == "conversation-root");
  CHECK(header_or_missing(out, "NServiceBus.TimeToBeReceived") == "1.01:00:01.5000000");
  CHECK(nsb::parse_time_span(header_or_missing(out, "NServiceBus.TimeToBeReceived"))
        == std::chrono::milliseconds(25 * 3600 * 1000 + 1500));
}

TEST_CASE("NServiceBus's name of a registered type is the first given", "[nservicebus]") {
  auto n = nsb_names(
      {{"Contracts.OrderPlaced", "order_placed"}, {"Legacy.OrderPlaced", "order_placed"}});
  CHECK(n.type_of("order_placed") == "Contracts.OrderPlaced");
  CHECK(n.type_of("other").empty());
}
