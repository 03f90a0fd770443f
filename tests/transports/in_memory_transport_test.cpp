// What only the in-memory transport promises beyond the common contract.
#include <catch2/catch.hpp>

#include "bus/failed_messages.hpp"
#include "bus/header_names.hpp"
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

TEST_CASE("the in-memory error queues replay where a message failed, and keep what cannot go") {
  bus::in_memory_transport t;
  for (const char* q : {"billing", "billing_error"})
    REQUIRE(t.declare_queue(q));
  auto failed = [&](std::string id, std::string original) {
    bus::envelope env;
    env.message_id = std::move(id);
    env.message_type = "order_placed";
    env.headers.set(bus::header::fault_endpoint, "billing");
    env.headers.set(bus::header::fault_exception_type, "card_declined");
    env.headers.set(bus::header::fault_original_address, std::move(original));
    REQUIRE(t.send("billing_error", env));
  };
  failed("m-1", "billing");
  failed("m-2", "gone"); // its queue was deleted since
  failed("m-3", "billing");
  auto* access = t.error_queues();
  REQUIRE(access != nullptr);
  auto all = [](const bus::failed_message&) { return true; };
  auto replayed = access->replay("billing_error", all, "billing", {});
  REQUIRE_FALSE(replayed);
  CHECK_THAT(replayed.error().message, Catch::Contains("replayed 2 of 3"));
  CHECK_THAT(replayed.error().message, Catch::Contains("'gone'"));
  // The one that could not go is back on the error queue, unchanged.
  auto left = t.browse("billing_error");
  REQUIRE(left.size() == 1);
  CHECK(left[0]->message_id == "m-2");
  CHECK(left[0]->headers.contains(bus::header::fault_exception_type));
  auto sent = t.browse("billing");
  REQUIRE(sent.size() == 2);
  CHECK(sent[0]->message_id == "m-1");
  CHECK_FALSE(sent[0]->headers.contains(bus::header::fault_exception_type));
  CHECK(sent[0]->headers.find(bus::header::replay_count) == std::optional<std::string_view>("1"));

  CHECK(access->read("nowhere", 0).error().code == bus::errc::unknown_queue);
  auto purged = access->purge("billing_error", all);
  REQUIRE(purged);
  CHECK(*purged == 1);
  CHECK(t.depth("billing_error") == 0);
}

namespace {

bus::envelope stream_event(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "t";
  return env;
}

std::vector<std::string> ids_of(const bus::test::delivery_collector& got) {
  std::vector<std::string> out;
  for (const auto& d : got.items())
    out.push_back(d.message->message_id);
  return out;
}

} // namespace

TEST_CASE("an in-memory stream starts a reader at its last message or at a time, by its clock") {
  bus::in_memory_transport t;
  auto now = bus::from_unix_ms(1'795'000'000'000);
  t.set_clock([&] { return now; });
  REQUIRE(t.declare_stream("audit", {}));
  REQUIRE(t.send("audit", stream_event("e-0")));
  now += std::chrono::minutes(1);
  REQUIRE(t.send("audit", stream_event("e-1")));
  REQUIRE(t.send("audit", stream_event("e-2")));
  CHECK(t.stream_bounds("audit")->first == 0);
  CHECK(t.stream_bounds("audit")->next == 3);
  CHECK_FALSE(t.stream_bounds("nowhere"));

  bus::test::delivery_collector last, since;
  REQUIRE(t.consume_stream("last", "audit", bus::stream_start::last(), 10, last.handler()));
  CHECK(ids_of(last) == std::vector<std::string>{"e-2"});
  REQUIRE(t.consume_stream("since", "audit",
                           bus::stream_start::at_time(now - std::chrono::seconds(30)), 10,
                           since.handler()));
  CHECK(ids_of(since) == std::vector<std::string>{"e-1", "e-2"});
}

TEST_CASE("an in-memory stream drops what is older than its max age, and its readers go on "
          "from the oldest kept") {
  bus::in_memory_transport t;
  auto now = bus::from_unix_ms(1'795'000'000'000);
  t.set_clock([&] { return now; });
  REQUIRE(t.declare_stream("audit", bus::stream_retention{0, std::chrono::hours(1)}));
  bus::test::delivery_collector slow;
  REQUIRE(t.consume_stream("slow", "audit", bus::stream_start::first(), 1, slow.handler()));
  REQUIRE(t.send("audit", stream_event("e-0")));
  REQUIRE(t.send("audit", stream_event("e-1")));
  now += std::chrono::hours(2);
  REQUIRE(t.send("audit", stream_event("e-2")));
  CHECK(t.stream_bounds("audit")->first == 2);
  // e-1 went before the reader got to it: it goes on at e-2.
  REQUIRE(t.ack(slow.items().at(0).tag));
  CHECK(ids_of(slow) == std::vector<std::string>{"e-0", "e-2"});
  CHECK(slow.items().at(1).stream_offset == 2);

  auto negative = t.declare_stream("bad", bus::stream_retention{0, std::chrono::seconds(-5)});
  REQUIRE_FALSE(negative);
  CHECK(negative.error().message
        == "stream 'bad': a stream's max age is -5 s; it must be positive, or zero for no limit");
}
