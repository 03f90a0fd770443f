// The ready-made type mappings of bus/type_mapping.hpp.
#include <catch2/catch.hpp>

#include "bus/type_mapping.hpp"

TEST_CASE("a type mapping names by a header's value, or names everything alike",
          "[foreign]") {
  bus::envelope msg;
  msg.headers.set("event", "OrderPlaced");
  auto by_event = bus::type_by_header("event", {{"OrderPlaced", "order_placed"}});
  CHECK(by_event(msg) == "order_placed");
  msg.headers.set("event", "OrderShipped");
  CHECK(by_event(msg).empty());
  CHECK(bus::type_by_header("kind", {{"OrderPlaced", "order_placed"}})(msg).empty());
  CHECK(bus::every_message_is("order_placed")(msg) == "order_placed");
}
