// The contract every transport keeps, whatever carries the messages.
#include <catch2/catch.hpp>

#include <thread>

#include "bus/message_registry.hpp"
#include "completion_log.hpp"
#include "fixtures.hpp"
#include "support/delivery_collector.hpp"
#include "support/sample_messages.hpp"

using bus::test::completion_log;
using bus::test::delivery_collector;

namespace {

using bus::test::message_ids;

bus::envelope text_message(std::string id, std::string type = "order_placed") {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = std::move(type);
  env.headers.set("tenant", "acme");
  env.body = bus::message_body::text(R"({"order_id":"o-1","amount":1})");
  return env;
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
  CHECK(message_ids(b.items()) == std::vector<std::string>{"m-1"});
  CHECK(message_ids(s.items()) == std::vector<std::string>{"m-1"});
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
  CHECK(message_ids(got.items()) == std::vector<std::string>{"m-0", "m-1", "m-2", "m-3"});
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
  CHECK(message_ids(got.items()) == std::vector<std::string>{"m-1", "m-2"});
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
  CHECK(message_ids(next.items()) == std::vector<std::string>{"m-1", "m-2"});
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

// ---- the asynchronous forms -------------------------------------------------

TEMPLATE_TEST_CASE("an asynchronous send completes once, with success, and its message arrives",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 10, got.handler()));
  completion_log done;
  f.transport->async_send(q, text_message("m-1"), done.make("m-1"));
  REQUIRE(done.wait_for(1));
  CHECK(done.outcome("m-1"));
  REQUIRE(got.wait_for(1));
  CHECK(message_ids(got.items()) == std::vector<std::string>{"m-1"});
  // A later operation has gone the same way; no second call came meanwhile.
  REQUIRE(f.transport->send(q, text_message("m-2")));
  REQUIRE(got.wait_for(2));
  CHECK(done.total() == 1);
  CHECK(done.each_exactly_once());
}

TEMPLATE_TEST_CASE("asynchronous sends from one thread arrive in the order they were made",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  completion_log done;
  std::vector<std::string> sent;
  for (int i = 0; i < 100; ++i) {
    sent.push_back("m-" + std::to_string(i));
    f.transport->async_send(q, text_message(sent.back()), done.make(sent.back()));
  }
  REQUIRE(done.wait_for(sent.size()));
  CHECK(done.succeeded() == sent.size());
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 200, got.handler()));
  REQUIRE(got.wait_for(sent.size()));
  CHECK(message_ids(got.items()) == sent);
  CHECK(done.each_exactly_once());
}

TEMPLATE_TEST_CASE("an asynchronous send to a queue that does not exist completes with "
                   "unknown_queue",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  completion_log done;
  f.transport->async_send(f.queue("nowhere"), text_message("m-1"), done.make("m-1"));
  REQUIRE(done.wait_for(1));
  auto outcome = done.outcome("m-1");
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().code == bus::errc::unknown_queue);
  // Sends to a queue that exists, made after it, are not held back by it.
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  f.transport->async_send(q, text_message("m-2"), done.make("m-2"));
  REQUIRE(done.wait_for(2));
  CHECK(done.outcome("m-2"));
  CHECK(done.each_exactly_once());
}

TEMPLATE_TEST_CASE("shared messages sent in one call arrive in their order, and each completes "
                   "once",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  completion_log done;
  std::vector<std::string> sent;
  std::vector<bus::envelope_ptr> msgs;
  for (int i = 0; i < 50; ++i) {
    sent.push_back("m-" + std::to_string(i));
    msgs.push_back(std::make_shared<const bus::envelope>(text_message(sent.back())));
  }
  f.transport->async_send_shared_all(q, msgs, done.make_indexed(sent));
  REQUIRE(done.wait_for(sent.size()));
  CHECK(done.succeeded() == sent.size());
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 100, got.handler()));
  REQUIRE(got.wait_for(sent.size()));
  CHECK(message_ids(got.items()) == sent);
  // To a queue that does not exist, each of them is refused.
  completion_log refused;
  f.transport->async_send_shared_all(f.queue("nowhere"), {msgs[0], msgs[1]},
                                     refused.make_indexed({"m-0", "m-1"}));
  REQUIRE(refused.wait_for(2));
  CHECK(refused.failed_with(bus::errc::unknown_queue) == 2);
  CHECK(done.each_exactly_once());
  CHECK(refused.each_exactly_once());
}

TEMPLATE_TEST_CASE("many asynchronous sends in flight at once, to two queues, all complete and "
                   "all arrive",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto a = f.queue("billing"), b = f.queue("shipping");
  REQUIRE(f.transport->declare_queue(a));
  REQUIRE(f.transport->declare_queue(b));
  delivery_collector got_a, got_b;
  REQUIRE(f.transport->consume(a, 1000, got_a.handler()));
  REQUIRE(f.transport->consume(b, 1000, got_b.handler()));
  completion_log done;
  constexpr std::size_t n = 500;
  // Two threads at once, each with its own order to keep.
  auto sender = [&](const std::string& q, const std::string& prefix) {
    for (std::size_t i = 0; i < n; ++i) {
      auto id = prefix + std::to_string(i);
      f.transport->async_send(q, text_message(id), done.make(id));
    }
  };
  std::thread t1(sender, a, "a-"), t2(sender, b, "b-");
  t1.join();
  t2.join();
  REQUIRE(done.wait_for(2 * n));
  CHECK(done.succeeded() == 2 * n);
  REQUIRE(got_a.wait_for(n));
  REQUIRE(got_b.wait_for(n));
  auto in_order = [](const std::vector<bus::delivery>& ds, const std::string& prefix) {
    for (std::size_t i = 0; i < ds.size(); ++i)
      if (ds[i].message->message_id != prefix + std::to_string(i))
        return false;
    return true;
  };
  CHECK(in_order(got_a.items(), "a-"));
  CHECK(in_order(got_b.items(), "b-"));
  CHECK(done.each_exactly_once());
}

TEMPLATE_TEST_CASE("an asynchronous publish reaches every subscribed queue and completes once",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto billing = f.queue("billing"), shipping = f.queue("shipping");
  for (const auto& q : {billing, shipping}) {
    REQUIRE(f.transport->declare_queue(q));
    REQUIRE(f.transport->subscribe(q, "order_placed"));
  }
  delivery_collector b, s;
  REQUIRE(f.transport->consume(billing, 10, b.handler()));
  REQUIRE(f.transport->consume(shipping, 10, s.handler()));
  completion_log done;
  f.transport->async_publish(text_message("m-1"), done.make("m-1"));
  f.transport->async_publish(text_message("m-2", "nobody_listens"), done.make("m-2"));
  REQUIRE(done.wait_for(2));
  CHECK(done.outcome("m-1"));
  CHECK(done.outcome("m-2")); // no listener is no error
  REQUIRE(b.wait_for(1));
  REQUIRE(s.wait_for(1));
  CHECK(message_ids(b.items()) == std::vector<std::string>{"m-1"});
  CHECK(message_ids(s.items()) == std::vector<std::string>{"m-1"});
  CHECK(done.each_exactly_once());
}

TEMPLATE_TEST_CASE("an asynchronous delayed send completes as the blocking one would",
                   "[conformance][async]", BUS_TRANSPORTS) {
  TestType f;
  auto q = f.queue("billing");
  REQUIRE(f.transport->declare_queue(q));
  delivery_collector got;
  REQUIRE(f.transport->consume(q, 10, got.handler()));
  completion_log done;
  f.transport->async_send_delayed(q, text_message("m-1"), std::chrono::milliseconds(200),
                                  done.make("m-1"));
  REQUIRE(done.wait_for(1));
  auto outcome = done.outcome("m-1");
  if (f.transport->capabilities().delayed_delivery) {
    CHECK(outcome);
    REQUIRE(got.wait_for(1));
    CHECK(message_ids(got.items()) == std::vector<std::string>{"m-1"});
  } else {
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().code == bus::errc::transport_failure);
  }
  CHECK(done.each_exactly_once());
}
