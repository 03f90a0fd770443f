#include <catch2/catch.hpp>

#include "bus/message_registry.hpp"
#include "support/sample_messages.hpp"

using bus::errc;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

bus::message_registry registry_with_orders() {
  bus::message_registry r;
  REQUIRE(r.add<order_placed>("order_placed"));
  REQUIRE(r.add<invoice_requested>("invoice_requested"));
  return r;
}

} // namespace

TEST_CASE("a registered message round-trips through its JSON text") {
  auto r = registry_with_orders();
  auto body = r.make_body(order_placed{"o-17", 99.5});
  REQUIRE(body);
  auto text = body->to_json_text();
  REQUIRE(text);
  CHECK(nlohmann::json::parse(*text) == nlohmann::json{{"order_id", "o-17"}, {"amount", 99.5}});
  auto decoded = r.decode("order_placed", *text);
  REQUIRE(decoded);
  REQUIRE(decoded->get<order_placed>() != nullptr);
  CHECK(*decoded->get<order_placed>() == order_placed{"o-17", 99.5});
}

TEST_CASE("a typed body hands out its object only as its own type") {
  auto r = registry_with_orders();
  auto body = r.make_body(order_placed{"o-1", 1});
  REQUIRE(body);
  CHECK(body->get<order_placed>() != nullptr);
  CHECK(body->get<invoice_requested>() == nullptr);
}

TEST_CASE("names and types are looked up both ways") {
  auto r = registry_with_orders();
  REQUIRE(r.find("invoice_requested"));
  CHECK(r.find("invoice_requested")->cpp_type == std::type_index(typeid(invoice_requested)));
  REQUIRE(r.find<order_placed>());
  CHECK(r.find<order_placed>()->name == "order_placed");
  CHECK_FALSE(r.find("nothing"));
}

TEST_CASE("registering a name or a type twice differently is refused, the same pair is not") {
  auto r = registry_with_orders();
  CHECK(r.add<order_placed>("order_placed"));
  auto other_type = r.add<invoice_requested>("order_placed");
  REQUIRE_FALSE(other_type);
  CHECK(other_type.error().code == errc::duplicate);
  auto other_name = r.add<order_placed>("order_created");
  REQUIRE_FALSE(other_name);
  CHECK(other_name.error().code == errc::duplicate);
  CHECK(other_name.error().message.find("order_placed") != std::string::npos);
  CHECK_FALSE(r.add<order_placed>(""));
}

TEST_CASE("decoding reports an unknown type, invalid JSON and a body of the wrong shape") {
  auto r = registry_with_orders();
  auto unknown = r.decode("order_shipped", "{}");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == errc::unknown_message_type);
  CHECK(unknown.error().message.find("order_shipped") != std::string::npos);

  auto not_json = r.decode("order_placed", "{\"order_id\": ");
  REQUIRE_FALSE(not_json);
  CHECK(not_json.error().code == errc::malformed_message);

  auto wrong_shape = r.decode("order_placed", R"({"order_id": 12})");
  REQUIRE_FALSE(wrong_shape);
  CHECK(wrong_shape.error().code == errc::malformed_message);
  CHECK(wrong_shape.error().message.find("order_placed") != std::string::npos);
}

TEST_CASE("making a body of an unregistered type is an error, not a crash") {
  bus::message_registry r;
  auto body = r.make_body(order_placed{"o-1", 1});
  REQUIRE_FALSE(body);
  CHECK(body.error().code == errc::unknown_message_type);
}

TEST_CASE("ensure_typed decodes text once and passes a typed body through") {
  auto r = registry_with_orders();
  auto typed = r.make_body(order_placed{"o-2", 2});
  REQUIRE(typed);
  auto same = r.ensure_typed("order_placed", *typed);
  REQUIRE(same);
  CHECK(same->object() == typed->object()); // shared, not copied
  auto from_text = r.ensure_typed("order_placed", bus::message_body::text(R"({"order_id":"o-3","amount":3})"));
  REQUIRE(from_text);
  CHECK(*from_text->get<order_placed>() == order_placed{"o-3", 3});
}

TEST_CASE("registering a message registers its fault event, which round-trips too") {
  auto r = registry_with_orders();
  auto fault_type = r.find("fault<order_placed>");
  REQUIRE(fault_type);
  CHECK(fault_type->cpp_type == std::type_index(typeid(bus::fault<order_placed>)));
  CHECK(fault_type->make_fault == nullptr); // no fault of a fault
  auto type = r.find<order_placed>();
  REQUIRE(type->make_fault != nullptr);
  CHECK(type->fault_type_name == "fault<order_placed>");

  order_placed failed{"o-9", 9};
  bus::fault_details d;
  d.exception = {"db_error", "deadlock"};
  d.reason = "retries exhausted";
  d.endpoint = "billing";
  d.at = bus::from_unix_ms(5'000);
  d.immediate_retries = 3;
  d.delivery_count = 2;
  auto made = type->make_fault(&failed, d, "m-9");
  auto body = bus::message_body::typed(made, fault_type);
  auto text = body.to_json_text();
  REQUIRE(text);
  auto back = r.decode("fault<order_placed>", *text);
  REQUIRE(back);
  const auto* f = back->get<bus::fault<order_placed>>();
  REQUIRE(f != nullptr);
  CHECK(f->message == failed);
  CHECK(f->message_id == "m-9");
  CHECK(f->exception_type == "db_error");
  CHECK(f->reason == "retries exhausted");
  CHECK(f->at == d.at);
  CHECK(f->immediate_retries == 3);
  CHECK(f->delivery_count == 2);
}

TEST_CASE("a type routes to the queue given last, and a type without a route is named in the error") {
  auto r = registry_with_orders();
  REQUIRE(r.route<order_placed>("orders"));
  REQUIRE(r.route<order_placed>("billing"));
  auto routed = r.route_of<order_placed>();
  REQUIRE(routed);
  CHECK(*routed == "billing");

  auto unrouted = r.route_of<invoice_requested>();
  REQUIRE_FALSE(unrouted);
  CHECK(unrouted.error().code == errc::invalid_configuration);
  CHECK_THAT(unrouted.error().message, Catch::Contains("message type 'invoice_requested' has no route"));

  auto empty = r.route<invoice_requested>("");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().code == errc::invalid_configuration);
}

TEST_CASE("only a registered message can be routed") {
  bus::message_registry r;
  auto refused = r.route<order_placed>("orders");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == errc::unknown_message_type);
  auto unrouted = r.route_of<order_placed>();
  REQUIRE_FALSE(unrouted);
  CHECK_THAT(unrouted.error().message, Catch::Contains("not a registered message"));
}
