// MassTransit's envelope read into the bus's, against golden messages
// written down from MassTransit's own sources (tests/interop/golden/).
#include <catch2/catch.hpp>


#include <nlohmann/json.hpp>

#include "bus/deadline.hpp"
#include "bus/masstransit.hpp"
#include "interop/golden.hpp"

namespace mt = bus::masstransit;
using bus::test::golden;

namespace {

bus::envelope received(std::string body) {
  bus::envelope e;
  e.message_id = "amqp-id";
  e.headers.set("amqp-content-type", std::string(mt::content_type));
  e.body = bus::message_body::text(std::move(body));
  return e;
}

mt::message_names names(std::vector<std::pair<std::string, std::string>> table) {
  auto made = mt::message_names::from(table);
  REQUIRE(made);
  return std::move(*made);
}

std::string header(const bus::envelope& e, std::string_view name) {
  return std::string(e.headers.find(name).value_or("<missing>"));
}

} // namespace

TEST_CASE("a golden MassTransit envelope reads as its registered type with its ids, times and "
          "headers",
          "[masstransit]") {
  auto read = mt::read_envelope(received(golden("masstransit_envelope.json")),
                                names({{"urn:message:Contracts:OrderPlaced", "order_placed"}}));
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
  CHECK(header(*read, "MT-Activity-Id")
        == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  CHECK(header(*read, mt::header::message_types) == "urn:message:Contracts:OrderPlaced");
  CHECK(header(*read, "amqp-content-type") == std::string(mt::content_type)); // received ones kept
  CHECK_FALSE(read->headers.find(mt::header::request_id)); // null ids are not headers
}

TEST_CASE("a MassTransit fault names its fault type first, then the generic one", "[masstransit]") {
  auto fault = "urn:message:MassTransit:Fault[[Contracts:OrderPlaced]]";
  auto read = mt::read_envelope(received(golden("masstransit_fault.json")),
                                names({{fault, "order_placed_fault"}}));
  REQUIRE(read);
  CHECK(read->message_type == "order_placed_fault");
  CHECK(mt::exchange_of(fault) == "MassTransit:Fault[[Contracts:OrderPlaced]]");
  auto unknown = mt::read_envelope(received(golden("masstransit_fault.json")), names({}));
  REQUIRE(unknown);
  CHECK(unknown->message_type.empty()); // skipped by the endpoint, its names in a header
  CHECK(header(*unknown, mt::header::message_types)
        == std::string(fault) + ";urn:message:MassTransit:Fault");
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
  auto read = mt::read_envelope(received(body), names({{"urn:message:Contracts:PriceQuery",
                                                        "price_query"}}));
  REQUIRE(read);
  CHECK(read->message_type == "price_query");
  CHECK(read->response_address == "SALES01_bus_x");
  CHECK(read->fault_address == "sales_faults");
  CHECK(header(*read, mt::header::request_id) == "r-1");
  CHECK(header(*read, mt::header::correlation_id) == "c-1");
  CHECK(header(*read, mt::header::initiator_id) == "i-1");
  CHECK(header(*read, mt::header::response_address)
        == "rabbitmq://mq:5673/sales/SALES01_bus_x?temporary=true");
  CHECK(header(*read, "tenant") == "acme");
  CHECK(header(*read, "attempt") == "2");
  CHECK(bus::expires_at(*read) == bus::from_iso8601("2024-05-01T12:00:30.500Z"));
}

TEST_CASE("a body that is not a MassTransit envelope says what is wrong", "[masstransit]") {
  auto no_names = names({});
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
  auto ok = names({{"urn:message:A", "a"}});
  CHECK(ok.urn_of("a") == "urn:message:A");
  CHECK(ok.registered_of({"urn:message:X", "urn:message:A"}) == "a");
  CHECK(mt::address_name("rabbitmq://localhost/orders") == "orders");
  CHECK(mt::address_name("exchange:Contracts:OrderPlaced") == "Contracts:OrderPlaced");
  CHECK(mt::address_name("") == "");
}
