// Messages from producers that are not a bus: named by the endpoint's
// foreign_types mapping (bus/type_mapping.hpp), or skipped with a reason
// that says what was looked at. On virtual time, in memory.
#include <catch2/catch.hpp>

#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

// A message as a plain client would send it: an id, a JSON body, its own
// header, and no type the bus knows.
bus::envelope foreign(std::string id, std::string kind, std::string body) {
  bus::envelope e;
  e.message_id = std::move(id);
  e.headers.set("event-kind", std::move(kind));
  e.body = bus::message_body::text(std::move(body));
  return e;
}

struct billing {
  std::vector<order_placed> seen;
  int mapped = 0; // how often the mapping ran
  int fail_first = 0;

  bus::message_bus& start(bus::testing::harness& h) {
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .message<bus::test::invoice_requested>("invoice_requested")
      .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({10s}).jitter(false); })
      .endpoint("billing", [this](bus::endpoint_builder& e) {
        auto by_kind = bus::type_by_header("event-kind", {{"OrderPlaced", "order_placed"},
                                                          {"InvoiceRequested", "invoice_requested"}});
        e.foreign_types([this, by_kind](const bus::envelope& msg) {
           ++mapped;
           if (msg.headers.find("event-kind") == std::optional<std::string_view>("Broken"))
             throw std::runtime_error("the mapping broke");
           return by_kind(msg);
         })
          .handle<order_placed>([this](const order_placed& m) {
            if (fail_first-- > 0)
              throw std::runtime_error("not yet");
            seen.push_back(m);
          });
      });
    return h.start(b);
  }
};

std::string skipped_reason(const bus::testing::harness& h) {
  auto skipped = h.skipped_queue("billing");
  REQUIRE(skipped.size() == 1);
  return std::string(skipped[0]->headers.find(bus::header::skipped_reason).value_or(""));
}

} // namespace

TEST_CASE("a message without a type is named by the endpoint's foreign_types mapping and handled",
          "[foreign]") {
  bus::testing::harness h;
  billing b;
  b.start(h);
  REQUIRE(h.transport().send("billing", foreign("f-1", "OrderPlaced",
                                                R"({"order_id":"o-1","amount":3})")));
  h.advance_until_idle();
  CHECK(b.seen == std::vector<order_placed>{{"o-1", 3}});
  CHECK(h.stats("billing").handled == 1);
  CHECK(h.skipped_queue("billing").empty());
}

TEST_CASE("a redelivered foreign message keeps the type its mapping gave", "[foreign]") {
  bus::testing::harness h;
  billing b;
  b.fail_first = 1;
  b.start(h);
  REQUIRE(h.transport().send("billing", foreign("f-2", "OrderPlaced",
                                                R"({"order_id":"o-2","amount":1})")));
  h.advance_until_idle();
  CHECK(b.seen == std::vector<order_placed>{{"o-2", 1}});
  CHECK(h.stats("billing").redeliveries_scheduled == 1);
  CHECK(b.mapped == 1); // the redelivery came back as an order_placed
}

TEST_CASE("a foreign message the mapping cannot name is skipped, saying what the mapping named",
          "[foreign]") {
  bus::testing::harness h;
  billing b;
  b.start(h);

  SECTION("a value the mapping does not know") {
    REQUIRE(h.transport().send("billing", foreign("f-3", "OrderShipped", "{}")));
    h.advance_until_idle();
    CHECK_THAT(skipped_reason(h), Catch::Contains("has no handler for a message without a type")
                                    && Catch::Contains("its foreign_types mapping named no type"));
  }
  SECTION("a type the endpoint does not handle") {
    REQUIRE(h.transport().send("billing", foreign("f-4", "InvoiceRequested", "{}")));
    h.advance_until_idle();
    CHECK_THAT(skipped_reason(h), Catch::Contains("named 'invoice_requested', which it has no "
                                                  "handler for"));
  }
  SECTION("a mapping that throws") {
    REQUIRE(h.transport().send("billing", foreign("f-5", "Broken", "{}")));
    h.advance_until_idle();
    CHECK_THAT(skipped_reason(h), Catch::Contains("its foreign_types mapping threw: the mapping broke"));
  }
  SECTION("a transport's note of what it looked at") {
    auto msg = foreign("f-6", "OrderShipped", "{}");
    msg.headers.set(bus::header::wire_error, "it has no bus-message-type header and no AMQP type "
                                             "property (exchange '', routing key 'billing')");
    REQUIRE(h.transport().send("billing", std::move(msg)));
    h.advance_until_idle();
    CHECK_THAT(skipped_reason(h), Catch::Contains("without a type: it has no bus-message-type "
                                                  "header and no AMQP type property"));
  }
  CHECK(b.seen.empty());
  CHECK(h.stats("billing").skipped == 1);
}

TEST_CASE("a foreign message whose body does not parse goes to the error queue without retries",
          "[foreign]") {
  bus::testing::harness h;
  billing b;
  b.start(h);
  REQUIRE(h.transport().send("billing", foreign("f-7", "OrderPlaced", "<order id='o-7'/>")));
  h.advance_until_idle();
  CHECK(h.error_queue("billing").size() == 1);
  CHECK(h.stats("billing").redeliveries_scheduled == 0);
  CHECK(b.seen.empty());
}

TEST_CASE("an endpoint that reads NServiceBus takes a message's type, conversation and times from "
          "its headers",
          "[foreign][nservicebus]") {
  bus::testing::harness h;
  std::vector<std::pair<order_placed, bus::envelope>> seen;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.nservicebus({{"Contracts.OrderPlaced", "order_placed"}})
      .handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
        seen.emplace_back(m, ctx.message());
      });
  });
  h.start(b);
  // As the RabbitMQ transport hands it over: the AMQP type property as its
  // type, NServiceBus's headers as they came.
  auto nsb = [](std::string id, std::string time_sent) {
    bus::envelope e;
    e.message_id = id;
    e.message_type = "Contracts.OrderPlaced";
    e.headers.set("NServiceBus.MessageId", id);
    e.headers.set("NServiceBus.EnclosedMessageTypes",
                  "Contracts.OrderPlaced, Contracts, Version=1.0.0.0, Culture=neutral, "
                  "PublicKeyToken=null");
    e.headers.set("NServiceBus.ConversationId", "conversation-1");
    e.headers.set("NServiceBus.ReplyToAddress", "Sales");
    e.headers.set("NServiceBus.TimeSent", std::move(time_sent));
    e.body = bus::message_body::text(R"({"order_id":"o-8","amount":2})");
    return e;
  };
  REQUIRE(h.transport().send("billing", nsb("n-1", "2024-05-01 12:00:00:000000 Z")));
  REQUIRE(h.transport().send("billing", nsb("n-2", "the first of May")));
  h.advance_until_idle();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].first == order_placed{"o-8", 2});
  CHECK(seen[0].second.message_type == "order_placed");
  CHECK(seen[0].second.correlation_id == "conversation-1");
  CHECK(seen[0].second.response_address == "Sales");
  CHECK(bus::to_iso8601(seen[0].second.sent_at) == "2024-05-01T12:00:00.000Z");
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_id == "n-2");
  CHECK_THAT(std::string(errors[0]->headers.find(bus::header::fault_message).value_or("")),
             Catch::Contains("NServiceBus.TimeSent of 'the first of May'"));
}
