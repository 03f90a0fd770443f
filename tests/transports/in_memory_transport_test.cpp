// What only the in-memory transport promises beyond the common contract.
#include <catch2/catch.hpp>

#include "bus/in_memory_transport.hpp"
#include "bus/message_registry.hpp"
#include "support/delivery_collector.hpp"
#include "support/sample_messages.hpp"

using bus::test::order_placed;

TEST_CASE("a typed message is shared by every subscriber, never serialized or copied") {
  bus::message_registry r;
  REQUIRE(r.add<order_placed>("order_placed"));
  bus::in_memory_transport t;
  REQUIRE(t.declare_queue("billing"));
  REQUIRE(t.declare_queue("shipping"));
  REQUIRE(t.subscribe("billing", "order_placed"));
  REQUIRE(t.subscribe("shipping", "order_placed"));
  bus::test::delivery_collector b, s;
  REQUIRE(t.consume("billing", 1, b.handler()));
  REQUIRE(t.consume("shipping", 1, s.handler()));
  bus::envelope env;
  env.message_id = "m-1";
  env.message_type = "order_placed";
  env.body = *r.make_body(order_placed{"o-1", 3});
  const void* object = env.body.object().get();
  REQUIRE(t.publish(std::move(env)));
  REQUIRE(b.size() == 1);
  REQUIRE(s.size() == 1);
  CHECK(b.items()[0].message->body.object().get() == object);
  CHECK(s.items()[0].message == b.items()[0].message);
}

TEST_CASE("the in-memory transport reports depth and outstanding deliveries per queue") {
  bus::in_memory_transport t;
  REQUIRE(t.declare_queue("q"));
  bus::envelope env;
  env.message_id = "m";
  env.message_type = "t";
  REQUIRE(t.send("q", env));
  REQUIRE(t.send("q", env));
  CHECK(t.depth("q") == 2);
  CHECK(t.browse("q").size() == 2);
  bus::test::delivery_collector got;
  REQUIRE(t.consume("q", 1, got.handler()));
  CHECK(t.depth("q") == 1);
  CHECK(t.unacked("q") == 1);
  CHECK(t.has_queue("q"));
  CHECK_FALSE(t.has_queue("other"));
}
