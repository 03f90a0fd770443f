// Messages from a producer that is not a bus, on a real broker: a plain
// rabbitmq-c client that sets AMQP properties and no bus header.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/header_names.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "interop/golden.hpp"
#include "raw_client.hpp"
#include "support/delivery_collector.hpp"
#include "support/eventually.hpp"
#include "support/sample_messages.hpp"

using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

// OrderPlaced as a .NET service declares it: MassTransit writes camelCase.
struct dotnet_order_placed {
  std::string orderId;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_order_placed, orderId, amount)

// And as NServiceBus's System.Text.Json writes it: PascalCase.
struct dotnet_pascal_order {
  std::string OrderId;
  double Amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_pascal_order, OrderId, Amount)

// What the endpoint answers and announces, as .NET contracts declare them.
struct dotnet_order_accepted {
  std::string orderId;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_order_accepted, orderId)
struct dotnet_invoice_requested {
  std::string orderId;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_invoice_requested, orderId, amount)

// What an NServiceBus endpoint answers and announces, PascalCase.
struct dotnet_pascal_accepted {
  std::string OrderId;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_pascal_accepted, OrderId)
struct dotnet_pascal_invoice {
  std::string OrderId;
  double Amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(dotnet_pascal_invoice, OrderId, Amount)

// The base of MassTransit's addresses on the test broker, as MassTransit
// writes them: the default port left out.
std::string masstransit_base(const bus::rabbitmq_settings& s) {
  return "rabbitmq://" + s.host + (s.port == 5672 ? "" : ":" + std::to_string(s.port)) + "/";
}

struct handled_orders {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<order_placed, bus::envelope>> seen;
  int skipped = 0;

  void add(const order_placed& m, const bus::envelope& e) {
    std::lock_guard<std::mutex> guard(mutex);
    seen.emplace_back(m, e);
    changed.notify_all();
  }
  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      if (e.kind != bus::event_kind::skipped)
        return;
      std::lock_guard<std::mutex> guard(mutex);
      ++skipped;
      changed.notify_all();
    };
  }
  bool wait_until(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), done);
  }
};

} // namespace

TEST_CASE("on RabbitMQ a plain AMQP client's message is handled as the type its properties or "
          "its routing key name, and replied to at its reply-to",
          "[foreign]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("legacy_orders");
  auto replies = bus::test::unique_name("legacy_replies");
  auto exchange = bus::test::unique_name("legacy.events");
  auto order_type = bus::test::unique_name("order_placed");
  handled_orders orders;

  auto reader = bus::test::connect_transport(settings);
  REQUIRE(reader->declare_queue(replies));
  bus::test::delivery_collector replied;
  REQUIRE(reader->consume(replies, 10, replied.handler()));

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe(orders.observer())
    .message<order_placed>(order_type)
    .message<invoice_requested>(bus::test::unique_name("invoice_requested"))
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.foreign_types(bus::type_by_header(std::string(bus::header::amqp_routing_key),
                                          {{"orders.placed", order_type}}))
        .handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
          if (!ctx.message().response_address.empty())
            (void)ctx.reply(invoice_requested{m.order_id, {"accepted"}}); // checked on arrival
          orders.add(m, ctx.message());
        });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  bus::test::raw_bind(settings, exchange, endpoint, "orders.#");

  // Named by its type property, with the other properties read too.
  bus::test::raw_message by_type;
  by_type.message_id = "legacy-1";
  by_type.type = order_type;
  by_type.correlation_id = "conversation-1";
  by_type.reply_to = replies;
  by_type.content_type = "application/json";
  by_type.timestamp = 1767225600;
  by_type.body = R"({"order_id":"o-1","amount":3})";
  bus::test::raw_publish(settings, endpoint, by_type);

  // Named by nothing but the routing key it was published with.
  bus::test::raw_message by_key;
  by_key.message_id = "legacy-2";
  by_key.exchange = exchange;
  by_key.routing_key = "orders.placed";
  by_key.body = R"({"order_id":"o-2","amount":4})";
  bus::test::raw_publish(settings, endpoint, by_key);

  // Named by nothing at all.
  bus::test::raw_message unnamed;
  unnamed.message_id = "legacy-3";
  unnamed.exchange = exchange;
  unnamed.routing_key = "orders.cancelled";
  unnamed.body = R"({"order_id":"o-3"})";
  bus::test::raw_publish(settings, endpoint, unnamed);

  REQUIRE(orders.wait_until([&] { return orders.seen.size() == 2 && orders.skipped == 1; }));
  REQUIRE(replied.wait_for(1));
  (*bus)->stop();

  std::map<std::string, std::pair<order_placed, bus::envelope>> by_id;
  for (auto& [m, e] : orders.seen)
    by_id.emplace(e.message_id, std::make_pair(m, e));
  REQUIRE(by_id.count("legacy-1") == 1);
  REQUIRE(by_id.count("legacy-2") == 1);
  const auto& first = by_id.at("legacy-1").second;
  CHECK(by_id.at("legacy-1").first == order_placed{"o-1", 3});
  CHECK(first.correlation_id == "conversation-1");
  CHECK(first.response_address == replies);
  CHECK(first.sent_at == bus::from_unix_ms(1767225600000));
  CHECK(by_id.at("legacy-2").first == order_placed{"o-2", 4});
  CHECK(by_id.at("legacy-2").second.headers.find(bus::header::amqp_exchange)
        == std::optional<std::string_view>(exchange));

  // The reply went where the plain client asked, in its conversation.
  const auto& reply = *replied.items().at(0).message;
  CHECK(reply.correlation_id == "conversation-1");
  CHECK(nlohmann::json::parse(*reply.body.to_json_text())["order_id"] == "o-1");
  for (const auto& d : replied.items())
    CHECK(reader->ack(d.tag));

  // The unnamed one is on the skipped queue, saying what was looked at.
  bus::test::delivery_collector skipped;
  REQUIRE(reader->consume(endpoint + "_skipped", 10, skipped.handler()));
  REQUIRE(skipped.wait_for(1));
  const auto& moved = *skipped.items().at(0).message;
  CHECK(moved.message_id == "legacy-3");
  auto reason = std::string(moved.headers.find(bus::header::skipped_reason).value_or(""));
  CHECK_THAT(reason, Catch::Contains("no bus-message-type header and no AMQP type property")
                       && Catch::Contains("routing key 'orders.cancelled'")
                       && Catch::Contains("its foreign_types mapping named no type"));
  for (const auto& d : skipped.items())
    CHECK(reader->ack(d.tag));
}

TEST_CASE("on RabbitMQ an endpoint that reads MassTransit handles a golden MassTransit publish "
          "from its type's exchange, and sends an envelope that does not parse to its error queue",
          "[foreign][masstransit]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("mt_billing");
  auto registered = bus::test::unique_name("order_placed");
  // MassTransit's name for the type, unique per run: its exchange is the broker's, shared.
  auto urn = "urn:message:Contracts:" + bus::test::unique_name("OrderPlaced");
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<dotnet_order_placed, bus::envelope>> seen;
  int dead_lettered = 0;

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe([&](const bus::bus_event& e) {
      std::lock_guard<std::mutex> guard(mutex);
      dead_lettered += e.kind == bus::event_kind::dead_lettered;
      changed.notify_all();
    })
    .message<dotnet_order_placed>(registered)
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.masstransit({{urn, registered}})
        .handle<dotnet_order_placed>([&](const dotnet_order_placed& m, bus::handler_context& ctx) {
          std::lock_guard<std::mutex> guard(mutex);
          seen.emplace_back(m, ctx.message());
          changed.notify_all();
        });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());

  auto envelope = nlohmann::json::parse(bus::test::golden("masstransit_envelope.json"));
  envelope["messageType"] = {urn};
  bus::test::raw_message published;
  published.exchange = bus::masstransit::exchange_of(urn); // as MassTransit publishes it
  published.message_id = envelope["messageId"].get<std::string>();
  published.content_type = std::string(bus::masstransit::content_type);
  published.body = envelope.dump(2);
  bus::test::raw_publish(settings, endpoint, published);

  bus::test::raw_message broken = published;
  broken.message_id = "mt-broken";
  broken.body = R"({"messageType":[")" + urn + R"("],"message":{}})"; // no messageId
  bus::test::raw_publish(settings, endpoint, broken);

  {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(30),
                             [&] { return seen.size() == 1 && dead_lettered == 1; }));
  }
  (*bus)->stop();
  const auto& [order, msg] = seen.at(0);
  CHECK(order.orderId == "o-1");
  CHECK(order.amount == 12.5);
  CHECK(msg.message_id == "5d0c0000-8c6f-0015-a3f1-08dc69d1e4b2");
  CHECK(msg.message_type == registered);
  CHECK(msg.correlation_id == "5d0c0000-8c6f-0015-a3f8-08dc69d1e4b2");
  CHECK(bus::to_iso8601(msg.sent_at) == "2024-05-01T12:00:00.123Z");
  CHECK(msg.headers.find("MT-Activity-Id")
        == std::optional<std::string_view>("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));

  auto reader = bus::test::connect_transport(settings);
  bus::test::delivery_collector errors;
  REQUIRE(reader->consume(endpoint + "_error", 10, errors.handler()));
  REQUIRE(errors.wait_for(1));
  const auto& failed = *errors.items().at(0).message;
  CHECK(failed.message_id == "mt-broken");
  CHECK_THAT(std::string(failed.headers.find(bus::header::fault_message).value_or("")),
             Catch::Contains("is not a MassTransit envelope: it has no messageId"));
  CHECK(std::string(failed.headers.find(bus::header::fault_exception_type).value_or(""))
        == "bus::message_deserialization_error");
  for (const auto& d : errors.items())
    CHECK(reader->ack(d.tag));
}

TEST_CASE("on RabbitMQ an endpoint that reads NServiceBus handles a golden NServiceBus publish and "
          "a send to its endpoint exchange",
          "[foreign][nservicebus]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("nsb_billing");
  auto registered = bus::test::unique_name("order_placed");
  // The .NET type, unique per run: its exchange is the broker's, shared.
  auto dotnet_type = "Contracts." + bus::test::unique_name("OrderPlaced");
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<dotnet_pascal_order, bus::envelope>> seen;

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<dotnet_pascal_order>(registered)
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.nservicebus({{dotnet_type, registered}})
        .handle<dotnet_pascal_order>([&](const dotnet_pascal_order& m, bus::handler_context& ctx) {
          std::lock_guard<std::mutex> guard(mutex);
          seen.emplace_back(m, ctx.message());
          changed.notify_all();
        });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());

  auto message = nlohmann::json::parse(bus::test::golden("nservicebus_headers.json"));
  auto enclosed = dotnet_type + ", Contracts, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null";
  message["headers"]["NServiceBus.EnclosedMessageTypes"] = enclosed;
  auto as_nservicebus_sends = [&](const std::string& id, const std::string& exchange) {
    bus::test::raw_message m;
    for (const auto& [name, value] : message["headers"].items())
      m.headers.emplace_back(name, value.get<std::string>());
    for (auto& [name, value] : m.headers)
      if (name == "NServiceBus.MessageId")
        value = id;
    const auto& p = message["properties"];
    m.message_id = id;
    m.type = dotnet_type; // EnclosedMessageTypes up to the first comma
    m.correlation_id = p["correlation_id"];
    m.reply_to = p["reply_to"];
    m.content_type = p["content_type"];
    m.exchange = exchange;
    m.body = message["body"].dump();
    return m;
  };
  // A publish, to the type's exchange; a send, to the endpoint's exchange.
  bus::test::raw_publish(settings, endpoint,
                         as_nservicebus_sends("nsb-1", bus::nservicebus::exchange_of(dotnet_type)));
  bus::test::raw_publish(settings, endpoint, as_nservicebus_sends("nsb-2", endpoint));
  {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() == 2; }));
  }
  (*bus)->stop();
  for (const auto& [order, msg] : seen) {
    CHECK(order.OrderId == "o-1");
    CHECK(order.Amount == 12.5);
    CHECK(msg.message_type == registered);
    CHECK(msg.correlation_id == "2d55209a-f4fb-4984-84cf-b17c00c5a2f1");
    CHECK(msg.response_address == "Sales");
    CHECK(bus::to_iso8601(msg.sent_at) == "2024-05-01T12:00:00.123Z");
  }
  CHECK(seen[0].second.message_id != seen[1].second.message_id);
}

TEST_CASE("on RabbitMQ an endpoint that speaks MassTransit publishes to its type's exchange and "
          "answers a MassTransit request in MassTransit's envelope",
          "[foreign][masstransit]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("mt_orders");
  auto listener = bus::test::unique_name("mt_invoicing");
  auto replies = bus::test::unique_name("mt_requester_replies");
  // MassTransit's names, unique per run: their exchanges are the broker's.
  auto urn_in = "urn:message:Contracts:" + bus::test::unique_name("SubmitOrder");
  auto urn_event = "urn:message:Contracts:" + bus::test::unique_name("InvoiceRequested");
  auto urn_reply = "urn:message:Contracts:" + bus::test::unique_name("OrderAccepted");
  auto in = bus::test::unique_name("submit_order"), event = bus::test::unique_name("invoice"),
       reply = bus::test::unique_name("order_accepted");
  std::atomic<int> handled{0};

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  auto transport = bus::test::connect_transport(settings);
  REQUIRE(transport->declare_queue(listener));
  REQUIRE(transport->declare_queue(replies));
  // A MassTransit consumer of the event: its queue on the type's exchange.
  bus::test::raw_bind(settings, bus::masstransit::exchange_of(urn_event), listener, "", "fanout");
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<dotnet_order_placed>(in)
    .message<dotnet_invoice_requested>(event)
    .message<dotnet_order_accepted>(reply)
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.masstransit({{urn_in, in}, {urn_event, event}, {urn_reply, reply}})
        .handle<dotnet_order_placed>([&](const dotnet_order_placed& m, bus::handler_context& ctx) {
          (void)ctx.publish(dotnet_invoice_requested{m.orderId, m.amount});
          (void)ctx.reply(dotnet_order_accepted{m.orderId});
          ++handled;
        });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());

  // A MassTransit request client's message (the golden envelope, with a
  // request id and the address its response goes to).
  auto request = nlohmann::json::parse(bus::test::golden("masstransit_envelope.json"));
  request["messageType"] = {urn_in};
  request["requestId"] = "5d0c0000-8c6f-0015-b6a2-08dc69d1e4b2";
  request["responseAddress"] = "rabbitmq://localhost/" + replies + "?temporary=true";
  bus::test::raw_message sent;
  sent.message_id = request["messageId"].get<std::string>();
  sent.content_type = std::string(bus::masstransit::content_type);
  sent.body = request.dump(2);
  bus::test::raw_publish(settings, endpoint, sent);

  bus::test::raw_got announced, answered;
  REQUIRE(bus::test::eventually(
    [&] { return (announced = bus::test::raw_get(settings, listener, true)).found; },
    std::chrono::seconds(30), std::chrono::milliseconds(50)));
  REQUIRE(bus::test::eventually(
    [&] { return (answered = bus::test::raw_get(settings, replies, true)).found; },
    std::chrono::seconds(30), std::chrono::milliseconds(50)));
  (*bus)->stop();
  CHECK(handled == 1);

  auto golden = nlohmann::ordered_json::parse(bus::test::golden("masstransit_envelope.json"));
  auto broker = masstransit_base(settings);
  for (const auto* got : {&announced, &answered}) {
    CHECK(got->content_type == bus::masstransit::content_type);
    CHECK_FALSE(got->message_id.empty());
    for (const auto& [name, value] : got->headers)
      CHECK(name.rfind("bus-", 0) != 0); // none of the bus's own
  }
  auto event_mt = nlohmann::ordered_json::parse(announced.body);
  CHECK(bus::test::field_names(event_mt) == bus::test::field_names(golden));
  CHECK(event_mt["messageType"] == nlohmann::ordered_json::array({urn_event}));
  // The message as the bus serializes it (keys in its own order).
  auto message_of = [](const nlohmann::ordered_json& mt) {
    return nlohmann::json::parse(mt["message"].dump());
  };
  CHECK(message_of(event_mt) == nlohmann::json({{"orderId", "o-1"}, {"amount", 12.5}}));
  CHECK(event_mt["destinationAddress"] == broker + bus::masstransit::exchange_of(urn_event));
  CHECK(event_mt["sourceAddress"] == broker + endpoint);
  CHECK(event_mt["conversationId"] == golden["conversationId"]); // the request's conversation
  CHECK(event_mt["requestId"].is_null());
  CHECK(event_mt["messageId"] == announced.message_id);

  auto reply_mt = nlohmann::ordered_json::parse(answered.body);
  CHECK(bus::test::field_names(reply_mt) == bus::test::field_names(golden));
  CHECK(reply_mt["messageType"] == nlohmann::ordered_json::array({urn_reply}));
  CHECK(message_of(reply_mt) == nlohmann::json({{"orderId", "o-1"}}));
  CHECK(reply_mt["requestId"] == "5d0c0000-8c6f-0015-b6a2-08dc69d1e4b2");
  CHECK(reply_mt["destinationAddress"] == broker + replies);
  CHECK(reply_mt["conversationId"] == golden["conversationId"]);
}

TEST_CASE("on RabbitMQ a MassTransit message that fails for good raises MassTransit's Fault<T>: "
          "published to its fault exchange, or sent to the faultAddress it gave",
          "[foreign][masstransit]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("mt_billing");
  auto subscriber = bus::test::unique_name("mt_fault_watch"); // a consumer of Fault<T>
  auto fault_queue = bus::test::unique_name("mt_faults");     // a faultAddress
  auto urn = "urn:message:Contracts:" + bus::test::unique_name("OrderPlaced");
  auto registered = bus::test::unique_name("order_placed");

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  auto transport = bus::test::connect_transport(settings);
  REQUIRE(transport->declare_queue(subscriber));
  REQUIRE(transport->declare_queue(fault_queue));
  // Where a MassTransit consumer of Fault<OrderPlaced> listens.
  auto fault_urns = bus::masstransit::fault_urns(urn);
  auto fault_exchange = bus::masstransit::exchange_of(fault_urns.substr(0, fault_urns.find(';')));
  CHECK(fault_exchange == "MassTransit:Fault--" + urn.substr(12) + "--");
  bus::test::raw_bind(settings, fault_exchange, subscriber, "", "fanout");
  b.transport(transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<dotnet_order_placed>(registered)
      .endpoint(endpoint, [&](bus::endpoint_builder& e) {
        e.masstransit({{urn, registered}})
            .unrecoverable<std::runtime_error>()
            .handle<dotnet_order_placed>([&](const dotnet_order_placed&, bus::handler_context&) {
              throw std::runtime_error("payment provider unavailable");
            });
      });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());

  auto envelope = nlohmann::json::parse(bus::test::golden("masstransit_envelope.json"));
  envelope["messageType"] = {urn};
  envelope["correlationId"] = "c-42";
  bus::test::raw_message published;
  published.exchange = bus::masstransit::exchange_of(urn);
  published.message_id = envelope["messageId"].get<std::string>();
  published.content_type = std::string(bus::masstransit::content_type);
  published.body = envelope.dump(2);
  bus::test::raw_publish(settings, endpoint, published);
  // The same with a faultAddress: its fault goes there, not to the exchange.
  envelope["messageId"] = "5d0c0000-8c6f-0015-a3f1-08dc69d1e4ff";
  envelope["faultAddress"] = "rabbitmq://localhost/" + fault_queue;
  published.message_id = envelope["messageId"].get<std::string>();
  published.body = envelope.dump(2);
  bus::test::raw_publish(settings, endpoint, published);

  bus::test::raw_got announced, addressed;
  REQUIRE(bus::test::eventually(
      [&] { return (announced = bus::test::raw_get(settings, subscriber, true)).found; },
      std::chrono::seconds(30), std::chrono::milliseconds(50)));
  REQUIRE(bus::test::eventually(
      [&] { return (addressed = bus::test::raw_get(settings, fault_queue, true)).found; },
      std::chrono::seconds(30), std::chrono::milliseconds(50)));
  // One fault each, where each belongs.
  CHECK_FALSE(bus::test::raw_get(settings, subscriber, true).found);
  CHECK(bus::test::eventually([&] { return *transport->message_count(endpoint + "_error") == 2; },
                              std::chrono::seconds(10), std::chrono::milliseconds(50)));
  (*bus)->stop();

  auto golden = nlohmann::ordered_json::parse(bus::test::golden("masstransit_fault.json"));
  auto broker = masstransit_base(settings);
  CHECK(announced.content_type == bus::masstransit::content_type);
  auto fault = nlohmann::ordered_json::parse(announced.body);
  CHECK(bus::test::field_names(fault) == bus::test::field_names(golden));
  CHECK(fault["messageType"]
        == nlohmann::ordered_json::array({"urn:message:MassTransit:Fault[[" + urn.substr(12) + "]]",
                                          "urn:message:MassTransit:Fault"}));
  CHECK(fault["destinationAddress"] == broker + fault_exchange);
  CHECK(fault["sourceAddress"] == broker + endpoint);
  CHECK(fault["correlationId"] == "c-42"); // as MassTransit's fault copies it
  CHECK(fault["conversationId"] == golden["conversationId"]);
  CHECK(fault["headers"]["MT-Fault-RetryCount"] == "0");
  const auto& message = fault["message"];
  CHECK(bus::test::field_names(message) == bus::test::field_names(golden["message"]));
  CHECK(message["faultedMessageId"] == "5d0c0000-8c6f-0015-a3f1-08dc69d1e4b2");
  CHECK(message["faultMessageTypes"] == nlohmann::ordered_json::array({urn}));
  CHECK(message["exceptions"][0]["exceptionType"] == "std::runtime_error");
  CHECK(message["exceptions"][0]["message"] == "payment provider unavailable");
  CHECK(nlohmann::json::parse(message["message"].dump())
        == nlohmann::json({{"orderId", "o-1"}, {"amount", 12.5}}));

  auto sent = nlohmann::ordered_json::parse(addressed.body);
  CHECK(sent["message"]["faultedMessageId"] == "5d0c0000-8c6f-0015-a3f1-08dc69d1e4ff");
  CHECK(sent["destinationAddress"] == broker + fault_queue);
}

TEST_CASE("on RabbitMQ an endpoint that speaks NServiceBus publishes to its type's exchange and "
          "replies with NServiceBus's headers",
          "[foreign][nservicebus]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("nsb_billing");
  auto subscriber = bus::test::unique_name("nsb_shipping"); // subscribed to the event
  auto sales = bus::test::unique_name("nsb_sales");         // the sender, where replies go
  // The .NET types, unique per run: their exchanges are the broker's, shared.
  auto type_in = "Contracts." + bus::test::unique_name("OrderPlaced");
  auto type_event = "Contracts." + bus::test::unique_name("InvoiceRequested");
  auto type_reply = "Contracts." + bus::test::unique_name("OrderAccepted");
  auto in = bus::test::unique_name("order_placed"), event = bus::test::unique_name("invoice"),
       reply = bus::test::unique_name("order_accepted");
  std::atomic<int> handled{0};

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  auto transport = bus::test::connect_transport(settings);
  REQUIRE(transport->declare_queue(subscriber));
  REQUIRE(transport->declare_queue(sales));
  // An NServiceBus subscriber of the event: its queue on the type's exchange.
  bus::test::raw_bind(settings, bus::nservicebus::exchange_of(type_event), subscriber, "",
                      "fanout");
  b.transport(transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<dotnet_pascal_order>(in)
      .message<dotnet_pascal_invoice>(event)
      .message<dotnet_pascal_accepted>(reply)
      .endpoint(endpoint, [&](bus::endpoint_builder& e) {
        e.nservicebus({{type_in, in}, {type_event, event}, {type_reply, reply}})
            .handle<dotnet_pascal_order>(
                [&](const dotnet_pascal_order& m, bus::handler_context& ctx) {
                  (void)ctx.publish(dotnet_pascal_invoice{m.OrderId, m.Amount});
                  (void)ctx.reply(dotnet_pascal_accepted{m.OrderId});
                  ++handled;
                });
      });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());

  // The golden message, sent by "Sales" to the endpoint's exchange.
  auto golden = nlohmann::json::parse(bus::test::golden("nservicebus_headers.json"));
  bus::test::raw_message sent;
  for (auto& [name, value] : golden["headers"].items())
    sent.headers.emplace_back(name, name == "NServiceBus.EnclosedMessageTypes" ? type_in
                                    : name == "NServiceBus.ReplyToAddress"     ? sales
                                    : name == "NServiceBus.MessageIntent"
                                        ? "Send"
                                        : value.get<std::string>());
  sent.message_id = golden["properties"]["message_id"];
  sent.type = type_in;
  sent.reply_to = sales;
  sent.content_type = "application/json";
  sent.exchange = endpoint;
  sent.body = golden["body"].dump();
  bus::test::raw_publish(settings, endpoint, sent);

  bus::test::raw_got announced, answered;
  REQUIRE(bus::test::eventually(
      [&] { return (announced = bus::test::raw_get(settings, subscriber, true)).found; },
      std::chrono::seconds(30), std::chrono::milliseconds(50)));
  REQUIRE(bus::test::eventually(
      [&] { return (answered = bus::test::raw_get(settings, sales, true)).found; },
      std::chrono::seconds(30), std::chrono::milliseconds(50)));
  (*bus)->stop();
  CHECK(handled == 1);

  auto header = [](const bus::test::raw_got& got, const std::string& name) {
    auto it = got.headers.find(name);
    return it == got.headers.end() ? std::string("<missing>") : it->second;
  };
  const std::string request_id = golden["properties"]["message_id"];
  for (const auto* got : {&announced, &answered}) {
    // Every header of the golden message but those only NServiceBus
    // itself writes (its version, its host id, its transport's confirms).
    for (const auto& [name, value] : golden["headers"].items())
      if (name != "NServiceBus.Version" && name != "$.diagnostics.originating.hostid"
          && name != "NServiceBus.Transport.RabbitMQ.ConfirmationId")
        CHECK(header(*got, name) != "<missing>");
    CHECK(header(*got, "NServiceBus.MessageId") == got->message_id);
    CHECK(header(*got, "NServiceBus.ConversationId")
          == golden["headers"]["NServiceBus.ConversationId"]);
    CHECK(header(*got, "NServiceBus.RelatedTo") == request_id);
    CHECK(header(*got, "NServiceBus.OriginatingEndpoint") == endpoint);
    CHECK(header(*got, "NServiceBus.ReplyToAddress") == endpoint);
    CHECK(header(*got, "NServiceBus.ContentType") == "application/json");
    CHECK(bus::nservicebus::parse_time(header(*got, "NServiceBus.TimeSent")));
  }
  CHECK(header(announced, "NServiceBus.MessageIntent") == "Publish");
  CHECK(header(announced, "NServiceBus.EnclosedMessageTypes") == type_event);
  CHECK(nlohmann::json::parse(announced.body)
        == nlohmann::json({{"OrderId", "o-1"}, {"Amount", 12.5}}));
  CHECK(header(answered, "NServiceBus.MessageIntent") == "Reply");
  CHECK(header(answered, "NServiceBus.EnclosedMessageTypes") == type_reply);
  CHECK(header(answered, "NServiceBus.CorrelationId") == request_id); // the request's id
  // NServiceBus reads the correlation id from the AMQP property over its
  // header: they agree.
  CHECK(answered.correlation_id == request_id);
  CHECK(nlohmann::json::parse(answered.body) == nlohmann::json({{"OrderId", "o-1"}}));
}
