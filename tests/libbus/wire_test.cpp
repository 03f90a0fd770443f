#include <catch2/catch.hpp>

#include "bus/header_names.hpp"
#include "bus/message_registry.hpp"
#include "bus/wire.hpp"
#include "support/sample_messages.hpp"

using bus::errc;
namespace h = bus::header;

TEST_CASE("an envelope survives the trip to the wire and back") {
  bus::message_registry r;
  REQUIRE(r.add<bus::test::order_placed>("order_placed"));
  bus::envelope env;
  env.message_id = "m-1";
  env.message_type = "order_placed";
  env.correlation_id = "c-1";
  env.sent_at = bus::from_unix_ms(1'000);
  env.source_address = "orders";
  env.destination_address = "billing";
  env.response_address = "orders";
  env.fault_address = "faults";
  env.delivery_count = 2;
  env.headers.set("tenant", "acme");
  env.body = *r.make_body(bus::test::order_placed{"o-1", 5});

  auto wire = bus::to_wire(env);
  REQUIRE(wire);
  CHECK(wire->headers.find(h::message_id) == std::optional<std::string_view>("m-1"));
  CHECK(wire->headers.find(h::sent_at) == std::optional<std::string_view>("1000"));
  CHECK(wire->headers.find(h::delivery_count) == std::optional<std::string_view>("2"));

  auto back = bus::from_wire(*wire);
  REQUIRE(back);
  CHECK(back->message_id == "m-1");
  CHECK(back->message_type == "order_placed");
  CHECK(back->correlation_id == "c-1");
  CHECK(back->sent_at == env.sent_at);
  CHECK(back->source_address == "orders");
  CHECK(back->destination_address == "billing");
  CHECK(back->response_address == "orders");
  CHECK(back->fault_address == "faults");
  CHECK(back->delivery_count == 2);
  CHECK(back->headers == bus::headers{{"tenant", "acme"}});
  CHECK_FALSE(back->body.is_typed());
  auto body = r.ensure_typed(back->message_type, back->body);
  REQUIRE(body);
  CHECK(*body->get<bus::test::order_placed>() == bus::test::order_placed{"o-1", 5});
}

TEST_CASE("wire messages without the headers an envelope needs are refused with the reason") {
  struct row {
    const char* what;
    bus::headers headers;
    const char* says;
  };
  std::vector<row> rows = {
    {"no message id", {{"bus-message-type", "t"}}, "bus-message-id"},
    {"no message type", {{"bus-message-id", "m"}}, "bus-message-type"},
    {"a sent-at that is text",
     {{"bus-message-id", "m"}, {"bus-message-type", "t"}, {"bus-sent-at", "yesterday"}},
     "bus-sent-at"},
    {"a sent-at too far from the epoch to be a time (found by the fuzzer)",
     {{"bus-message-id", "m"}, {"bus-message-type", "t"}, {"bus-sent-at", "1700000000000000000"}},
     "bus-sent-at"},
    {"a negative delivery count",
     {{"bus-message-id", "m"}, {"bus-message-type", "t"}, {"bus-delivery-count", "-1"}},
     "bus-delivery-count"},
    {"a delivery count with trailing junk",
     {{"bus-message-id", "m"}, {"bus-message-type", "t"}, {"bus-delivery-count", "3x"}},
     "bus-delivery-count"},
  };
  for (const auto& r : rows) {
    INFO(r.what);
    auto env = bus::from_wire(bus::wire_message{r.headers, "{}"});
    REQUIRE_FALSE(env);
    CHECK(env.error().code == errc::malformed_message);
    CHECK(env.error().message.find(r.says) != std::string::npos);
  }
}
