// What the RabbitMQ transport adds to the conformance suite: the wire form
// on a real broker, fan-out and competition between processes, foreign
// messages, and the topology it declares.
#include <catch2/catch.hpp>

#include <set>

#include "broker.hpp"
#include "bus/header_names.hpp"
#include "raw_client.hpp"
#include "support/delivery_collector.hpp"
#include "support/eventually.hpp"
#include "timed_collector.hpp"

using namespace std::chrono_literals;
using bus::test::delivery_collector;
using bus::test::timed_collector;

namespace {

bus::envelope message(std::string id, std::string type = "order_placed") {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = std::move(type);
  env.body = bus::message_body::text(R"({"order_id":"o-1","amount":1})");
  return env;
}

} // namespace

TEST_CASE("a message crosses the broker with every envelope field and header intact",
          "[rabbitmq]") {
  auto t = bus::test::connect_transport();
  auto q = bus::test::unique_name("round_trip");
  REQUIRE(t->declare_queue(q));
  delivery_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));

  bus::envelope sent;
  sent.message_id = "6f1c1e52-2f0c-4a47-9d7e-3a4c1b2d9e10";
  sent.message_type = "invoice_requested";
  sent.correlation_id = "conversation-7";
  sent.sent_at = bus::from_unix_ms(1767225600123);
  sent.source_address = "sales";
  sent.destination_address = q;
  sent.response_address = "sales";
  sent.fault_address = "sales_faults";
  sent.delivery_count = 3;
  sent.headers.set("tenant", "acme");
  sent.headers.set("note", "naïve ✓ — unicode survives");
  sent.headers.set("empty", "");
  sent.headers.set(bus::header::failed_attempts, "4");
  sent.body = bus::message_body::text(R"({"order_id":"o-9","lines":["a","ü"]})");
  REQUIRE(t->send(q, sent));

  REQUIRE(got.wait_for(1));
  auto d = got.items().at(0);
  const auto& env = *d.message;
  CHECK(d.queue == q);
  CHECK_FALSE(d.redelivered);
  CHECK(env.message_id == sent.message_id);
  CHECK(env.message_type == sent.message_type);
  CHECK(env.correlation_id == sent.correlation_id);
  CHECK(env.sent_at == sent.sent_at);
  CHECK(env.source_address == sent.source_address);
  CHECK(env.destination_address == sent.destination_address);
  CHECK(env.response_address == sent.response_address);
  CHECK(env.fault_address == sent.fault_address);
  CHECK(env.delivery_count == 3);
  CHECK(env.headers == sent.headers);
  CHECK_FALSE(env.body.is_typed());
  CHECK(env.body.to_json_text().value() == R"({"order_id":"o-9","lines":["a","ü"]})");
  CHECK(t->ack(d.tag));
}

TEST_CASE("a publish from one process reaches the subscribed queues of every process",
          "[rabbitmq]") {
  auto billing_process = bus::test::connect_transport();
  auto shipping_process = bus::test::connect_transport();
  auto type = bus::test::unique_name("order_placed");
  auto other_type = bus::test::unique_name("order_cancelled");
  auto billing = bus::test::unique_name("billing"), shipping = bus::test::unique_name("shipping"),
       audit = bus::test::unique_name("audit");
  REQUIRE(billing_process->declare_queue(billing));
  REQUIRE(billing_process->subscribe(billing, type));
  REQUIRE(billing_process->subscribe(billing, type)); // idempotent: still one copy
  REQUIRE(shipping_process->declare_queue(shipping));
  REQUIRE(shipping_process->subscribe(shipping, type));
  REQUIRE(shipping_process->declare_queue(audit));
  REQUIRE(shipping_process->subscribe(audit, other_type));

  REQUIRE(billing_process->publish(message("m-1", type)));

  // A confirmed publish has been routed: the counts are final.
  CHECK(billing_process->message_count(billing).value() == 1);
  CHECK(billing_process->message_count(shipping).value() == 1);
  CHECK(billing_process->message_count(audit).value() == 0);
  delivery_collector b, s;
  REQUIRE(billing_process->consume(billing, 10, b.handler()));
  REQUIRE(shipping_process->consume(shipping, 10, s.handler()));
  REQUIRE(b.wait_for(1));
  REQUIRE(s.wait_for(1));
  CHECK(b.items()[0].message->message_id == "m-1");
  CHECK(s.items()[0].message->message_id == "m-1");
  CHECK(billing_process->ack(b.items()[0].tag));
  CHECK(shipping_process->ack(s.items()[0].tag));
}

TEST_CASE("competing consumers in two processes share one queue, each message handled once",
          "[rabbitmq]") {
  std::vector<std::shared_ptr<bus::rabbitmq_transport>> processes{bus::test::connect_transport(),
                                                                  bus::test::connect_transport()};
  auto q = bus::test::unique_name("work");
  REQUIRE(processes[0]->declare_queue(q));
  const int total = 12;
  for (int i = 0; i < total; ++i)
    REQUIRE(processes[0]->send(q, message("m-" + std::to_string(i))));
  timed_collector got;
  // Prefetch 1: each holds one message until it settles it, so the second
  // consumer gets work while the first still holds its first message.
  REQUIRE(processes[0]->consume(q, 1, got.handler(0)));
  REQUIRE(processes[1]->consume(q, 1, got.handler(1)));
  std::set<std::string> seen;
  int per_process[2] = {0, 0};
  for (int i = 0; i < total; ++i) {
    REQUIRE(got.wait_for(static_cast<std::size_t>(i) + 1));
    auto a = got.arrivals()[static_cast<std::size_t>(i)];
    CHECK(seen.insert(a.item.message->message_id).second); // never twice
    CHECK_FALSE(a.item.redelivered);
    ++per_process[a.consumer];
    REQUIRE(processes[static_cast<std::size_t>(a.consumer)]->ack(a.item.tag));
  }
  CHECK(seen.size() == total);
  CHECK(per_process[0] > 0);
  CHECK(per_process[1] > 0);
  CHECK(processes[0]->message_count(q).value() == 0);
}

TEST_CASE("a message that is not a bus message arrives as an envelope that says what is wrong",
          "[rabbitmq]") {
  auto t = bus::test::connect_transport();
  auto q = bus::test::unique_name("foreign");
  REQUIRE(t->declare_queue(q));
  auto settings = bus::test::test_settings();
  // No bus headers, a body that is not JSON, only an AMQP message-id.
  bus::test::raw_publish(settings, q,
                         bus::test::raw_with({{"origin", "legacy"}}, "legacy-17", "<order id=17/>"));
  // Bus headers, one of them broken.
  bus::test::raw_publish(settings, q,
                         bus::test::raw_with({{"bus-message-id", "m-2"},
                                              {"bus-message-type", "order_placed"},
                                              {"bus-sent-at", "yesterday"}},
                                             "", R"({"order_id":"o-2","amount":2})"));
  // Nothing at all to name it by.
  bus::test::raw_publish(settings, q, bus::test::raw_with({}, "", ""));

  delivery_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));
  REQUIRE(got.wait_for(3));
  auto items = got.items();
  const auto& legacy = *items[0].message;
  CHECK(legacy.message_id == "legacy-17");
  CHECK(legacy.message_type.empty()); // the bus skips it: no handler for no type
  CHECK(legacy.body.to_json_text().value() == "<order id=17/>");
  CHECK(legacy.headers.find("origin") == std::optional<std::string_view>("legacy"));
  CHECK_THAT(std::string(legacy.headers.find(bus::rabbitmq_wire_error_header).value_or("")),
             Catch::Contains("no bus-message-type header and no AMQP type"));

  const auto& broken = *items[1].message;
  CHECK(broken.message_id == "m-2");
  CHECK(broken.message_type == "order_placed");
  CHECK_THAT(std::string(broken.headers.find(bus::rabbitmq_wire_error_header).value_or("")),
             Catch::Contains("bus-sent-at"));

  const auto& anonymous = *items[2].message;
  CHECK(anonymous.message_id.size() == 36); // a fresh UUID
  CHECK(anonymous.message_type.empty());
  CHECK(anonymous.body.empty());

  for (const auto& d : items)
    CHECK(t->ack(d.tag));
  // And the transport carries on.
  REQUIRE(t->send(q, message("m-after")));
  REQUIRE(got.wait_for(4));
  CHECK(got.items()[3].message->message_id == "m-after");
  CHECK_FALSE(got.items()[3].message->headers.contains(bus::rabbitmq_wire_error_header));
}

namespace {

bus::rabbitmq_settings quorum_settings() {
  auto s = bus::test::test_settings();
  s.queue_type = bus::rabbitmq_queue_type::quorum;
  return s;
}

} // namespace

TEST_CASE("quorum queues count redeliveries natively and classic queues do not", "[rabbitmq]") {
  auto classic = bus::test::connect_transport(); // the default
  auto quorum = bus::test::connect_transport(quorum_settings());
  CHECK_FALSE(classic->capabilities().native_delivery_count);
  CHECK(quorum->capabilities().native_delivery_count);
  for (const auto& t : {quorum, classic}) {
    CHECK(t->capabilities().durable);
    CHECK(t->capabilities().delayed_delivery);
    CHECK(t->name() == "rabbitmq");
  }
  // The bus's own counter travels either way.
  for (const auto& t : {quorum, classic}) {
    auto q = bus::test::unique_name("counted");
    REQUIRE(t->declare_queue(q));
    auto m = message("m-1");
    m.delivery_count = 2;
    REQUIRE(t->send(q, m));
    delivery_collector got;
    REQUIRE(t->consume(q, 1, got.handler()));
    REQUIRE(got.wait_for(1));
    CHECK(got.items()[0].message->delivery_count == 2);
    CHECK(t->ack(got.items()[0].tag));
  }
}

TEST_CASE("on the bus's quorum queues a requeued message is the next one delivered",
          "[rabbitmq]") {
  // RabbitMQ 3.10 puts a message requeued on a quorum queue without a
  // delivery limit behind the ones waiting; with x-delivery-limit, which
  // the transport now always sets (issue 15), it is the next one delivered,
  // as on classic queues and as the transport contract asks.
  auto t = bus::test::connect_transport(quorum_settings());
  auto q = bus::test::unique_name("quorum_requeue");
  REQUIRE(t->declare_queue(q));
  REQUIRE(t->send(q, message("m-1")));
  REQUIRE(t->send(q, message("m-2")));
  delivery_collector got;
  REQUIRE(t->consume(q, 1, got.handler()));
  REQUIRE(got.wait_for(1));
  REQUIRE(t->reject(got.items()[0].tag, /*requeue=*/true));
  REQUIRE(got.wait_for(2));
  REQUIRE(t->ack(got.items()[1].tag));
  REQUIRE(got.wait_for(3));
  auto items = got.items();
  CHECK(items[1].message->message_id == "m-1");
  CHECK(items[1].redelivered);
  CHECK(items[2].message->message_id == "m-2");
  CHECK_FALSE(items[2].redelivered);
  CHECK(t->ack(items[2].tag));
}

TEST_CASE("a quorum queue dead-letters at its delivery limit to the error queue it was declared "
          "with, whatever its name",
          "[rabbitmq][quorum]") {
  auto s = quorum_settings();
  s.delivery_limit = 1;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("billing");
  bus::queue_options options;
  options.dead_letter_queue = q + ".failures"; // no suffix of the settings
  REQUIRE(t->declare_queue_with(options.dead_letter_queue, options));
  REQUIRE(t->declare_queue_with(q, options));
  REQUIRE(t->send(q, message("m-1")));
  delivery_collector got;
  REQUIRE(t->consume(q, 1, got.handler()));
  // The first delivery and one redelivery: the limit of 1 is reached.
  REQUIRE(got.wait_for(1));
  REQUIRE(t->reject(got.items()[0].tag, /*requeue=*/true));
  REQUIRE(got.wait_for(2));
  REQUIRE(t->reject(got.items()[1].tag, /*requeue=*/true));
  CHECK(bus::test::eventually(
      [&] {
        auto n = t->message_count(options.dead_letter_queue);
        return n && *n == 1;
      },
      20s));
  CHECK_FALSE(t->message_count(q + "_error")); // never declared, never the target
}

TEST_CASE("a temporary queue is a classic queue the broker deletes once unused", "[rabbitmq]") {
  auto t = bus::test::connect_transport(quorum_settings()); // even where queues are quorum ones
  auto q = bus::test::unique_name("replies");
  bus::queue_options temporary;
  temporary.temporary = true;
  REQUIRE(t->declare_queue_with(q, temporary));
  REQUIRE(t->declare_queue_with(q, temporary)); // idempotent, as every declaration
  std::string arguments, type;
  for (const auto& row : bus::test::list_queues("type arguments"))
    if (!row.empty() && row[0] == q) {
      type = row.size() > 1 ? row[1] : "";
      for (std::size_t i = 2; i < row.size(); ++i)
        arguments += row[i];
    }
  CHECK(type == "classic");
  CHECK_THAT(arguments, Catch::Contains("x-expires"));
}

TEST_CASE("a queue that exists with another queue type is refused with the broker's reason",
          "[rabbitmq]") {
  auto classic = bus::test::connect_transport();
  auto quorum = bus::test::connect_transport(quorum_settings());
  auto q = bus::test::unique_name("mixed");
  REQUIRE(classic->declare_queue(q));
  auto again = quorum->declare_queue(q);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(again.error().message, Catch::Contains("declaring queue '" + q + "'"));
  // The broker names the first argument that differs (x-queue-type or, as
  // 3.10 checks them, x-dead-letter-exchange).
  CHECK_THAT(again.error().message, Catch::Contains("inequivalent arg"));
  // And what the bus wanted instead, and the way out (issue 15).
  CHECK_THAT(again.error().message, Catch::Contains("already exists with other arguments"));
  CHECK_THAT(again.error().message,
             Catch::Contains("quorum queue with x-delivery-limit=20 dead-lettering to '" + q
                             + "_error'"));
  // The failed declaration closed a channel, not the transport.
  REQUIRE(quorum->send(q, message("m-1")));
  CHECK(quorum->message_count(q).value() == 1);
  CHECK(quorum->reconnects() == 0);
}

TEST_CASE("names AMQP cannot carry are refused before they reach the broker", "[rabbitmq]") {
  auto t = bus::test::connect_transport();
  auto long_name = std::string(256, 'q');
  auto declared = t->declare_queue(long_name);
  REQUIRE_FALSE(declared);
  CHECK(declared.error().code == bus::errc::invalid_configuration);
  CHECK_FALSE(t->declare_queue(""));
  CHECK_FALSE(t->subscribe("q", ""));
  auto m = message("m-1");
  m.headers.set(std::string(300, 'h'), "x");
  auto q = bus::test::unique_name("names");
  REQUIRE(t->declare_queue(q));
  auto sent = t->send(q, m);
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == bus::errc::malformed_message);
  // Still connected and working.
  CHECK(t->send(q, message("m-2")));
  CHECK(t->reconnects() == 0);
}

TEST_CASE("acknowledgements given just before the transport closes still reach the broker",
          "[rabbitmq]") {
  auto q = bus::test::unique_name("last_acks");
  {
    auto t = bus::test::connect_transport();
    REQUIRE(t->declare_queue(q));
    for (int i = 0; i < 5; ++i)
      REQUIRE(t->send(q, message("m-" + std::to_string(i))));
    delivery_collector got;
    REQUIRE(t->consume(q, 10, got.handler()));
    REQUIRE(got.wait_for(5));
    for (const auto& d : got.items())
      REQUIRE(t->ack(d.tag)); // queued for the I/O thread, then at once:
  }                           // closed: the queued acks go out before the connection does
  auto t = bus::test::connect_transport();
  CHECK(t->message_count(q).value() == 0);
}

TEST_CASE("deliveries left unsettled when the transport closes go back to their queue",
          "[rabbitmq]") {
  auto q = bus::test::unique_name("unsettled");
  {
    auto t = bus::test::connect_transport();
    REQUIRE(t->declare_queue(q));
    REQUIRE(t->send(q, message("m-1")));
    delivery_collector got;
    REQUIRE(t->consume(q, 10, got.handler()));
    REQUIRE(got.wait_for(1));
  }
  auto t = bus::test::connect_transport();
  delivery_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));
  REQUIRE(got.wait_for(1));
  CHECK(got.items()[0].message->message_id == "m-1");
  CHECK(got.items()[0].redelivered);
  CHECK(t->ack(got.items()[0].tag));
}

TEST_CASE("consuming a queue that does not exist is an unknown_queue error that can be retried",
          "[rabbitmq]") {
  auto t = bus::test::connect_transport();
  auto q = bus::test::unique_name("later");
  delivery_collector got;
  auto early = t->consume(q, 1, got.handler());
  REQUIRE_FALSE(early);
  CHECK(early.error().code == bus::errc::unknown_queue);
  CHECK_THAT(early.error().message, Catch::Contains("NOT_FOUND"));
  REQUIRE(t->declare_queue(q));
  REQUIRE(t->consume(q, 1, got.handler()));
  REQUIRE(t->send(q, message("m-1")));
  REQUIRE(got.wait_for(1));
  CHECK(t->ack(got.items()[0].tag));
}
