// MassTransit's envelope read into the bus's, and written from it, against
// golden messages written down from MassTransit's own sources
// (tests/interop/golden/).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "bus/deadline.hpp"
#include "bus/masstransit.hpp"
#include "interop/golden.hpp"
#include "support/envelope_text.hpp"

namespace mt = bus::masstransit;
using bus::test::field_names;
using bus::test::golden;

namespace {

using bus::test::header_or_missing;

bus::envelope received(std::string body) {
  bus::envelope e;
  e.message_id = "amqp-id";
  e.headers.set("amqp-content-type", std::string(mt::content_type));
  e.body = bus::message_body::text(std::move(body));
  return e;
}

mt::message_names mt_names(std::vector<std::pair<std::string, std::string>> table) {
  auto made = mt::message_names::from(table);
  REQUIRE(made);
  return std::move(*made);
}

} // namespace

TEST_CASE("a golden MassTransit envelope reads as its registered type with its ids, times and "
          "headers",
          "[masstransit]") {
  auto read = mt::read_envelope(received(golden("masstransit_envelope.json")),
                                mt_names({{"urn:message:Contracts:OrderPlaced", "order_placed"}}));
  REQUIRE(read);
  CHECK(read->message_id == "5d0c0000-8c6f-0015-a3f1-08dc69d1e4b2");
  CHECK(read->message_type == "order_placed");
  CHECK(read->correlation_id == "5d0c0000-8c6f-0015-a3f8-08dc69d1e4b2"); // its conversation
  CHECK(read->source_address == "SALES01_OrdersApi_bus_8ayoyyfpkrycdtwgbdq5jtfzfd");
  CHECK(read->destination_address == "Contracts:OrderPlaced");
  CHECK(read->response_address.empty()); // null
  CHECK(read->fault_address.empty());
  CHECK(bus::to_iso8601(read->sent_at) == "2024-05-01T12:00:00.123Z");
  CHECK_FALSE(bus::expires_at(*read)); // expirationTime null
  CHECK(nlohmann::json::parse(*read->body.to_json_text())
        == nlohmann::json({{"orderId", "o-1"}, {"amount", 12.5}}));
  CHECK(header_or_missing(*read, "MT-Activity-Id")
        == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  CHECK(header_or_missing(*read, mt::header::message_types) == "urn:message:Contracts:OrderPlaced");
  CHECK(header_or_missing(*read, "amqp-content-type")
        == std::string(mt::content_type));                 // received ones kept
  CHECK_FALSE(read->headers.find(mt::header::request_id)); // null ids are not headers
}

TEST_CASE("a MassTransit fault names its fault type first, then the generic one", "[masstransit]") {
  auto fault = "urn:message:MassTransit:Fault[[Contracts:OrderPlaced]]";
  auto read = mt::read_envelope(received(golden("masstransit_fault.json")),
                                mt_names({{fault, "order_placed_fault"}}));
  REQUIRE(read);
  CHECK(read->message_type == "order_placed_fault");
  // The exchange MassTransit publishes it to, named by its RabbitMQ name
  // formatter: generic arguments between "--", separated by "::".
  CHECK(mt::exchange_of(fault) == "MassTransit:Fault--Contracts:OrderPlaced--");
  auto unknown = mt::read_envelope(received(golden("masstransit_fault.json")), mt_names({}));
  REQUIRE(unknown);
  CHECK(unknown->message_type.empty()); // skipped by the endpoint, its names in a header
  CHECK(header_or_missing(*unknown, mt::header::message_types)
        == std::string(fault) + ";urn:message:MassTransit:Fault");
}

TEST_CASE("MassTransit's exchange names: a namespace and a name, nested and generic types",
          "[masstransit]") {
  CHECK(mt::exchange_of("urn:message:Contracts:OrderPlaced") == "Contracts:OrderPlaced");
  CHECK(mt::exchange_of("urn:message:Contracts:Orders+Placed") == "Contracts:Orders-Placed");
  CHECK(mt::exchange_of("urn:message:Tests:Pair[[System:String],[Contracts:Order]]")
        == "Tests:Pair--System:String::Contracts:Order--");
  CHECK(mt::exchange_of("urn:message:MassTransit:Fault[[Tests:G[[Contracts:Order]]]]")
        == "MassTransit:Fault--Tests:G--Contracts:Order----");
  CHECK(mt::exchange_of("Contracts:OrderPlaced").empty()); // not a URN
}

TEST_CASE("a MassTransit request's ids and addresses, Newtonsoft's form without nulls",
          "[masstransit]") {
  // The older serializer leaves null fields out; both forms read.
  auto body = R"({"messageId":"m-1","requestId":"r-1","correlationId":"c-1",
    "conversationId":"conv-1","initiatorId":"i-1",
    "responseAddress":"rabbitmq://mq:5673/sales/SALES01_bus_x?temporary=true",
    "faultAddress":"queue:sales_faults","messageType":["urn:message:Contracts:PriceQuery"],
    "message":{"sku":"s-1"},"sentTime":"2024-05-01T12:00:00Z",
    "expirationTime":"2024-05-01T12:00:30.5Z","headers":{"tenant":"acme","attempt":2}})";
  auto read = mt::read_envelope(received(body),
                                mt_names({{"urn:message:Contracts:PriceQuery", "price_query"}}));
  REQUIRE(read);
  CHECK(read->message_type == "price_query");
  CHECK(read->response_address == "SALES01_bus_x");
  CHECK(read->fault_address == "sales_faults");
  CHECK(header_or_missing(*read, mt::header::request_id) == "r-1");
  CHECK(header_or_missing(*read, mt::header::correlation_id) == "c-1");
  CHECK(header_or_missing(*read, mt::header::initiator_id) == "i-1");
  CHECK(header_or_missing(*read, mt::header::response_address)
        == "rabbitmq://mq:5673/sales/SALES01_bus_x?temporary=true");
  CHECK(header_or_missing(*read, "tenant") == "acme");
  CHECK(header_or_missing(*read, "attempt") == "2");
  CHECK(bus::expires_at(*read) == bus::from_iso8601("2024-05-01T12:00:30.500Z"));
}

TEST_CASE("a body that is not a MassTransit envelope says what is wrong", "[masstransit]") {
  auto no_names = mt_names({});
  struct row {
    const char* body;
    const char* says;
  };
  for (auto r : {row{"<xml/>", "not a JSON object"}, row{"[1,2]", "not a JSON object"},
                 row{R"({"message":{}})", "no messageId"},
                 row{R"({"messageId":"m-1"})", "no message"},
                 row{R"({"messageId":"m-1","message":{},"sentTime":"yesterday"})",
                     "sentTime 'yesterday'"}}) {
    INFO(r.body);
    auto read = mt::read_envelope(received(r.body), no_names);
    REQUIRE_FALSE(read);
    CHECK(read.error().code == bus::errc::malformed_message);
    CHECK_THAT(read.error().message, Catch::Contains("is not a MassTransit envelope")
                                       && Catch::Contains(r.says));
  }
}

TEST_CASE("MassTransit names are checked when they are given", "[masstransit]") {
  CHECK_FALSE(mt::message_names::from({{"Contracts:OrderPlaced", "order_placed"}}));
  CHECK_FALSE(mt::message_names::from({{"urn:message:A", "a"}, {"urn:message:A", "b"}}));
  CHECK_FALSE(mt::message_names::from({{"urn:message:A", "a"}, {"urn:message:B", "a"}}));
  auto ok = mt_names({{"urn:message:A", "a"}});
  CHECK(ok.urn_of("a") == "urn:message:A");
  CHECK(ok.registered_of({"urn:message:X", "urn:message:A"}) == "a");
  CHECK(mt::address_name("rabbitmq://localhost/orders") == "orders");
  CHECK(mt::address_name("exchange:Contracts:OrderPlaced") == "Contracts:OrderPlaced");
  CHECK(mt::address_name("") == "");
}

namespace {

// A message of the bus's own, as a handler of "billing" sends it.
bus::envelope sent_by_billing() {
  bus::envelope e;
  e.message_id = "0b7e3c52-5a1f-4c3e-9d2a-6f1e8b7c4d10";
  e.message_type = "order_placed";
  e.correlation_id = "6a3f2b1c-8d4e-4f5a-9b6c-7d8e9f0a1b2c";
  e.sent_at = *bus::from_iso8601("2024-05-01T12:00:00.123Z");
  e.source_address = "billing";
  e.body = bus::message_body::text(R"({"orderId":"o-1","amount":12.5})");
  e.headers.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  e.headers.set("bus-delivery-count", "0");
  e.headers.set("tenant", "acme");
  return e;
}

mt::host_info a_host() {
  return {"billing01", "billing", 4242, "billing", "1.0.0", "C++17, CAF 0.17.6", "Linux 6.1.0"};
}

nlohmann::ordered_json written(const bus::envelope& e) {
  auto text = mt::write_envelope(e, "urn:message:Contracts:OrderPlaced", "rabbitmq://localhost/",
                                 a_host());
  REQUIRE(text);
  return nlohmann::ordered_json::parse(*text);
}

} // namespace

TEST_CASE("what the bus publishes in MassTransit's envelope has the golden envelope's fields, in "
          "its order and of its kinds",
          "[masstransit]") {
  auto gold = nlohmann::ordered_json::parse(golden("masstransit_envelope.json"));
  auto ours_mt = written(sent_by_billing());
  CHECK(field_names(ours_mt) == field_names(gold));
  for (const auto& [name, value] : gold.items()) {
    INFO(name);
    if (!value.is_null() && !ours_mt[name].is_null())
      CHECK(ours_mt[name].type() == value.type());
  }
  CHECK(field_names(ours_mt["host"]) == field_names(gold["host"]));
  // A publish: the type's exchange is the destination, as in the golden one.
  CHECK(ours_mt["destinationAddress"] == gold["destinationAddress"]);
  CHECK(ours_mt["messageType"] == gold["messageType"]);
  CHECK(ours_mt["message"] == gold["message"]);
  CHECK(ours_mt["sourceAddress"] == "rabbitmq://localhost/billing");
  CHECK(ours_mt["conversationId"] == "6a3f2b1c-8d4e-4f5a-9b6c-7d8e9f0a1b2c");
  CHECK(ours_mt["sentTime"] == "2024-05-01T12:00:00.123Z");
  CHECK(ours_mt["expirationTime"].is_null());
  CHECK(ours_mt["requestId"].is_null());
  // The trace as MassTransit's activity id, as in the golden envelope; the
  // message's own headers; none of the bus's.
  CHECK(ours_mt["headers"]["MT-Activity-Id"] == gold["headers"]["MT-Activity-Id"]);
  CHECK(ours_mt["headers"]["tenant"] == "acme");
  CHECK_FALSE(ours_mt["headers"].contains("bus-delivery-count"));
  CHECK_FALSE(ours_mt["headers"].contains("traceparent"));
}

TEST_CASE("a reply to a MassTransit request carries its requestId back, to the address it gave",
          "[masstransit]") {
  auto reply = sent_by_billing();
  reply.destination_address = "SALES01_OrdersApi_bus_8ayoyyfpkrycdtwgbdq5jtfzfd";
  reply.headers.set(std::string(mt::header::request_id), "5d0c0000-8c6f-0015-b6a2-08dc69d1e4b2");
  reply.headers.set(std::string(mt::header::correlation_id), "c-9");
  bus::set_expires_at(reply, *bus::from_iso8601("2024-05-01T12:00:30.000Z"));
  auto out = written(reply);
  CHECK(out["requestId"] == "5d0c0000-8c6f-0015-b6a2-08dc69d1e4b2");
  CHECK(out["correlationId"] == "c-9");
  CHECK(out["destinationAddress"]
        == "rabbitmq://localhost/SALES01_OrdersApi_bus_8ayoyyfpkrycdtwgbdq5jtfzfd");
  CHECK(out["expirationTime"] == "2024-05-01T12:00:30.000Z");
}

TEST_CASE("what the bus writes in MassTransit's envelope reads back as it was", "[masstransit]") {
  auto sent = sent_by_billing();
  auto text = mt::write_envelope(sent, "urn:message:Contracts:OrderPlaced", "rabbitmq://mq/orders/",
                                 a_host());
  REQUIRE(text);
  auto read = mt::read_envelope(received(*text),
                                mt_names({{"urn:message:Contracts:OrderPlaced", "order_placed"}}));
  REQUIRE(read);
  CHECK(read->message_id == sent.message_id);
  CHECK(read->message_type == "order_placed");
  CHECK(read->correlation_id == sent.correlation_id);
  CHECK(read->source_address == "billing");
  CHECK(read->sent_at == sent.sent_at);
  CHECK(nlohmann::json::parse(*read->body.to_json_text())
        == nlohmann::json::parse(*sent.body.to_json_text()));
}

TEST_CASE("a body that is not JSON cannot be written in MassTransit's envelope", "[masstransit]") {
  auto e = sent_by_billing();
  e.body = bus::message_body::text("<order/>");
  auto text = mt::write_envelope(e, "urn:message:Contracts:OrderPlaced", "rabbitmq://mq/", a_host());
  REQUIRE_FALSE(text);
  CHECK(text.error().code == bus::errc::malformed_message);
  CHECK_THAT(text.error().message, Catch::Contains("its body is not JSON"));
}

namespace {

bus::fault_details a_fault() {
  bus::fault_details f;
  f.exception = {"std::runtime_error", "Payment provider unavailable"};
  f.reason = "retries exhausted";
  f.at = *bus::from_iso8601("2024-05-01T12:00:01.234Z");
  f.endpoint = "billing";
  return f;
}

} // namespace

TEST_CASE("what the bus writes as MassTransit's Fault<T> has the golden fault's fields, in its "
          "order and of its kinds",
          "[masstransit]") {
  auto gold = nlohmann::ordered_json::parse(golden("masstransit_fault.json"));
  auto urn = "urn:message:Contracts:OrderPlaced";
  auto urns = mt::fault_urns(urn);
  CHECK(urns
        == "urn:message:MassTransit:Fault[[Contracts:OrderPlaced]];urn:message:MassTransit:Fault");

  auto failed = sent_by_billing();
  auto fault = mt::write_fault(failed, urn, a_fault(), "f-1", a_host());
  REQUIRE(fault);
  auto event = sent_by_billing();
  event.message_id = "e-1";
  event.body = bus::message_body::text(*fault);
  auto text = mt::write_envelope(event, urns, "rabbitmq://localhost/", a_host());
  REQUIRE(text);
  auto envelope = nlohmann::ordered_json::parse(*text);
  CHECK(field_names(envelope) == field_names(gold));
  CHECK(envelope["messageType"] == gold["messageType"]);
  CHECK(envelope["destinationAddress"] == gold["destinationAddress"]); // its exchange

  const auto& message = envelope["message"];
  CHECK(field_names(message) == field_names(gold["message"]));
  for (const auto& [name, value] : gold["message"].items()) {
    INFO(name);
    if (!value.is_null() && !message[name].is_null())
      CHECK(message[name].type() == value.type());
  }
  CHECK(field_names(message["exceptions"][0]) == field_names(gold["message"]["exceptions"][0]));
  CHECK(field_names(message["host"]) == field_names(gold["message"]["host"]));
  CHECK(message["faultId"] == "f-1");
  CHECK(message["faultedMessageId"] == failed.message_id);
  CHECK(message["timestamp"] == "2024-05-01T12:00:01.234Z");
  CHECK(message["exceptions"][0]["exceptionType"] == "std::runtime_error");
  CHECK(message["exceptions"][0]["message"] == "Payment provider unavailable");
  CHECK(message["exceptions"][0]["source"] == "billing");
  CHECK(message["faultMessageTypes"] == gold["message"]["faultMessageTypes"]);
  CHECK(message["message"] == gold["message"]["message"]); // the failed message as it was
}

TEST_CASE("a fault of a message whose body is not JSON cannot be written", "[masstransit]") {
  auto failed = sent_by_billing();
  failed.body = bus::message_body::text("<order/>");
  auto fault =
      mt::write_fault(failed, "urn:message:Contracts:OrderPlaced", a_fault(), "f-1", a_host());
  REQUIRE_FALSE(fault);
  CHECK(fault.error().code == bus::errc::malformed_message);
  CHECK_THAT(fault.error().message, Catch::Contains("cannot be written in MassTransit's fault"));
}

TEST_CASE("this process as MassTransit's host block names it", "[masstransit]") {
  const auto& host = mt::this_host();
  CHECK_FALSE(host.machine_name.empty());
  CHECK(host.process_name == "core_tests");
  CHECK(host.process_id > 0);
  CHECK_FALSE(host.assembly_version.empty());
  CHECK_THAT(host.operating_system_version, Catch::StartsWith("Linux "));
}
