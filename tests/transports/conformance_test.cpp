// The contract every transport keeps, whatever carries the messages.
#include <catch2/catch.hpp>

#include "bus/message_registry.hpp"
#include "fixtures.hpp"
#include "support/delivery_collector.hpp"
#include "support/sample_messages.hpp"

using bus::test::delivery_collector;

namespace {

bus::envelope text_message(std::string id, std::string type = "order_placed") {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = std::move(type);
  env.headers.set("tenant", "acme");
  env.body = bus::message_body::text(R"({"order_id":"o-1","amount":1})");
  return env;
}

std::vector<std::string> ids(const std::vector<bus::delivery>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds)
    out.push_back(d.message->message_id);
  return out;
}

} // namespace

#ifndef BUS_TRANSPORTS
#define BUS_TRANSPORTS bus::test::in_memory_fixture
#endif

TEMPLATE_TEST_CASE("a message sent to a queue reaches its consumer with its headers",
                   "[conformance]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 10, got.handler()));
  REQUIRE(f.transport->send(q, text_message("m-1")));
  REQUIRE(got.wait_for(1));
  auto d = got.items().at(0);
  CHECK(d.queue == q);
  CHECK(d.message->message_id == "m-1");
  CHECK(d.message->headers.find("tenant") == std::optional<std::string_view>("acme"));
  CHECK_FALSE(d.redelivered);
  CHECK(f.transport->ack(d.tag));
}

TEMPLATE_TEST_CASE("a publish reaches every subscribed queue and no other", "[conformance]",
                   BUS_TRANSPORTS) {
  TestType f;
  auto billing = f.queue("billing"), shipping = f.queue("shipping"), audit = f.queue("audit");
  for (const auto& q : {billing, shipping, audit})
    REQUIRE(f.transport->declare_queue(q));
  REQUIRE(f.transport->subscribe(billing, "order_placed"));
  REQUIRE(f.transport->subscribe(shipping, "order_placed"));
  REQUIRE(f.transport->subscribe(audit, "order_cancelled"));
  delivery_collector b, s, a;
  REQUIRE(f.transport->consume(billing, 10, b.handler()));
  REQUIRE(f.transport->consume(shipping, 10, s.handler()));
  REQUIRE(f.transport->consume(audit, 10, a.handler()));
  REQUIRE(f.transport->publish(text_message("m-1")));
  REQUIRE(b.wait_for(1));
  REQUIRE(s.wait_for(1));
  CHECK(ids(b.items()) == std::vector<std::string>{"m-1"});
  CHECK(ids(s.items()) == std::vector<std::string>{"m-1"});
  CHECK(a.size() == 0);
}

TEMPLATE_TEST_CASE("a publish nobody subscribed to is not an error", "[conformance]",
                   BUS_TRANSPORTS) {
  TestType f;
  CHECK(f.transport->publish(text_message("m-1", "nobody_listens")));
}

TEMPLATE_TEST_CASE("no more deliveries are outstanding than the consumer allows", "[conformance]",
                   BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  for (int i = 0; i < 5; ++i)
    REQUIRE(f.transport->send(q, text_message("m-" + std::to_string(i))));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 2, got.handler()));
  REQUIRE(got.wait_for(2));
  CHECK(got.size() == 2);
  // Each settlement makes room for exactly one more.
  REQUIRE(f.transport->ack(got.items()[0].tag));
  REQUIRE(got.wait_for(3));
  CHECK(got.size() == 3);
  REQUIRE(f.transport->reject(got.items()[1].tag, /*requeue=*/false));
  REQUIRE(got.wait_for(4));
  CHECK(got.size() == 4);
  CHECK(ids(got.items()) == std::vector<std::string>{"m-0", "m-1", "m-2", "m-3"});
}

TEMPLATE_TEST_CASE("a rejected message with requeue comes back marked as redelivered",
                   "[conformance]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 1, got.handler()));
  REQUIRE(f.transport->send(q, text_message("m-1")));
  REQUIRE(got.wait_for(1));
  REQUIRE(f.transport->reject(got.items()[0].tag, /*requeue=*/true));
  REQUIRE(got.wait_for(2));
  auto again = got.items()[1];
  CHECK(again.message->message_id == "m-1");
  CHECK(again.redelivered);
  CHECK(again.tag != got.items()[0].tag);
}

TEMPLATE_TEST_CASE("settling a delivery twice is an error", "[conformance]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 1, got.handler()));
  REQUIRE(f.transport->send(q, text_message("m-1")));
  REQUIRE(got.wait_for(1));
  REQUIRE(f.transport->ack(got.items()[0].tag));
  CHECK_FALSE(f.transport->ack(got.items()[0].tag));
}

TEMPLATE_TEST_CASE("messages wait in their queue until somebody consumes it", "[conformance]",
                   BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  REQUIRE(f.transport->send(q, text_message("m-1")));
  REQUIRE(f.transport->send(q, text_message("m-2")));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 10, got.handler()));
  REQUIRE(got.wait_for(2));
  CHECK(ids(got.items()) == std::vector<std::string>{"m-1", "m-2"});
}

TEMPLATE_TEST_CASE("after cancel no delivery arrives and unsettled ones can still be settled",
                   "[conformance]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 1, got.handler()));
  REQUIRE(f.transport->send(q, text_message("m-1")));
  REQUIRE(got.wait_for(1));
  f.transport->cancel(q);
  REQUIRE(f.transport->send(q, text_message("m-2")));
  REQUIRE(f.transport->reject(got.items()[0].tag, /*requeue=*/true));
  CHECK(got.size() == 1);
  // Both wait for the next consumer, the requeued one first.
  delivery_collector next;
  REQUIRE(f.transport->consume(q, 10, next.handler()));
  REQUIRE(next.wait_for(2));
  CHECK(ids(next.items()) == std::vector<std::string>{"m-1", "m-2"});
}

TEMPLATE_TEST_CASE("bad requests get a clear error", "[conformance]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  auto undeclared = f.transport->send(f.queue("nowhere"), text_message("m-1"));
  REQUIRE_FALSE(undeclared);
  CHECK(undeclared.error().code == bus::errc::unknown_queue);
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  CHECK_FALSE(f.transport->consume(q, 0, got.handler()));
  REQUIRE(f.transport->consume(q, 1, got.handler()));
  auto second = f.transport->consume(q, 1, got.handler());
  REQUIRE_FALSE(second);
  CHECK(second.error().code == bus::errc::duplicate);
}
