// The contract of streams (bus/stream.hpp) every transport that has them
// keeps: readers of one stream each read from their own offset, and
// settling removes nothing.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fixtures.hpp"
#include "support/delivery_collector.hpp"

using bus::test::delivery_collector;

namespace {

using bus::test::message_ids;

bus::envelope event(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "order_placed";
  env.body = bus::message_body::text(R"({"order_id":"o-1","amount":1})");
  return env;
}

std::vector<std::uint64_t> offsets(const std::vector<bus::delivery>& ds) {
  std::vector<std::uint64_t> out;
  for (const auto& d : ds)
    out.push_back(d.stream_offset.value_or(~std::uint64_t{0}));
  return out;
}

template <class Fixture> void append(Fixture& f, const std::string& stream, int from, int to) {
  for (int i = from; i < to; ++i)
    REQUIRE(f.transport->send(stream, event("e-" + std::to_string(i))));
}

void ack_all(bus::transport& t, const std::vector<bus::delivery>& ds) {
  for (const auto& d : ds)
    REQUIRE(t.ack(d.tag));
}

} // namespace

#ifndef BUS_STREAM_TRANSPORTS
#define BUS_STREAM_TRANSPORTS bus::test::in_memory_fixture
#endif

TEMPLATE_TEST_CASE("two readers read one stream from their own offsets, and an ack removes "
                   "nothing",
                   "[streams]", BUS_STREAM_TRANSPORTS) {
  TestType f;
  REQUIRE(f.transport->capabilities().streams);
  auto s = f.queue("audit");
  REQUIRE(f.transport->declare_stream(s, {}));
  append(f, s, 0, 4);
  delivery_collector all;
  REQUIRE(f.transport->consume_stream(f.queue("projection"), s, bus::stream_start::first(), 10,
                                      all.handler()));
  REQUIRE(all.wait_for(4));
  CHECK(message_ids(all.items()) == std::vector<std::string>{"e-0", "e-1", "e-2", "e-3"});
  const auto first = all.items()[0].stream_offset.value();
  CHECK(offsets(all.items()) == std::vector<std::uint64_t>{first, first + 1, first + 2, first + 3});
  CHECK(all.items()[0].queue == s);
  ack_all(*f.transport, all.items());

  // The second reader starts at the third message's offset, after the
  // first acknowledged everything: nothing was removed.
  delivery_collector late;
  REQUIRE(f.transport->consume_stream(f.queue("replay"), s, bus::stream_start::at_offset(first + 2),
                                      10, late.handler()));
  REQUIRE(late.wait_for(2));
  CHECK(message_ids(late.items()) == std::vector<std::string>{"e-2", "e-3"});

  // What comes next reaches both.
  append(f, s, 4, 5);
  REQUIRE(all.wait_for(5));
  REQUIRE(late.wait_for(3));
  CHECK(all.items()[4].message->message_id == "e-4");
  CHECK(late.items()[2].message->message_id == "e-4");
  CHECK(late.items()[2].stream_offset == first + 4);
}

TEMPLATE_TEST_CASE("a reader from 'next' reads only what is appended after it started", "[streams]",
                   BUS_STREAM_TRANSPORTS) {
  TestType f;
  auto s = f.queue("audit");
  REQUIRE(f.transport->declare_stream(s, {}));
  append(f, s, 0, 3);
  delivery_collector got;
  REQUIRE(f.transport->consume_stream(f.queue("tail"), s, bus::stream_start::next(), 10,
                                      got.handler()));
  append(f, s, 3, 5);
  REQUIRE(got.wait_for(2));
  CHECK(message_ids(got.items()) == std::vector<std::string>{"e-3", "e-4"});
}

TEMPLATE_TEST_CASE("a reader has no more outstanding than it allows, and a requeue puts nothing "
                   "back",
                   "[streams]", BUS_STREAM_TRANSPORTS) {
  TestType f;
  auto s = f.queue("audit");
  REQUIRE(f.transport->declare_stream(s, {}));
  append(f, s, 0, 4);
  delivery_collector got;
  REQUIRE(f.transport->consume_stream(f.queue("slow"), s, bus::stream_start::first(), 2,
                                      got.handler()));
  REQUIRE(got.wait_for(2));
  CHECK(got.size() == 2);
  // A reject with requeue frees the place; the next message comes, not
  // the rejected one again.
  REQUIRE(f.transport->reject(got.items()[0].tag, /*requeue=*/true));
  REQUIRE(got.wait_for(3));
  REQUIRE(f.transport->ack(got.items()[1].tag));
  REQUIRE(got.wait_for(4));
  CHECK(message_ids(got.items()) == std::vector<std::string>{"e-0", "e-1", "e-2", "e-3"});
  CHECK_FALSE(f.transport->ack(got.items()[1].tag)); // settled twice
}

TEMPLATE_TEST_CASE("a cancelled reader gets nothing more, and reads again from a stored offset",
                   "[streams]", BUS_STREAM_TRANSPORTS) {
  TestType f;
  auto s = f.queue("audit");
  auto reader = f.queue("projection");
  REQUIRE(f.transport->declare_stream(s, {}));
  append(f, s, 0, 3);
  delivery_collector before;
  REQUIRE(f.transport->consume_stream(reader, s, bus::stream_start::first(), 10, before.handler()));
  REQUIRE(before.wait_for(3));
  ack_all(*f.transport, before.items());
  const auto resume_at = before.items()[1].stream_offset.value() + 1; // e-1 the last settled
  f.transport->cancel(reader);
  append(f, s, 3, 4);
  CHECK(before.size() == 3);

  delivery_collector after;
  REQUIRE(f.transport->consume_stream(reader, s, bus::stream_start::at_offset(resume_at), 10,
                                      after.handler()));
  REQUIRE(after.wait_for(2));
  CHECK(message_ids(after.items()) == std::vector<std::string>{"e-2", "e-3"});
}

TEMPLATE_TEST_CASE("a publish reaches a stream subscribed to its type", "[streams]",
                   BUS_STREAM_TRANSPORTS) {
  TestType f;
  auto s = f.queue("audit");
  REQUIRE(f.transport->declare_stream(s, {}));
  REQUIRE(f.transport->subscribe(s, "order_placed"));
  REQUIRE(f.transport->publish(event("p-1")));
  delivery_collector got;
  REQUIRE(f.transport->consume_stream(f.queue("projection"), s, bus::stream_start::first(), 10,
                                      got.handler()));
  REQUIRE(got.wait_for(1));
  CHECK(got.items()[0].message->message_id == "p-1");
}

TEMPLATE_TEST_CASE("bad stream requests get a clear error", "[streams]", BUS_STREAM_TRANSPORTS) {
  TestType f;
  auto s = f.queue("audit");
  auto q = f.queue("billing");
  delivery_collector got;
  auto undeclared = f.transport->consume_stream(f.queue("r"), f.queue("nowhere"),
                                                bus::stream_start::first(), 1, got.handler());
  REQUIRE_FALSE(undeclared);
  CHECK(undeclared.error().code == bus::errc::unknown_queue);

  REQUIRE(f.transport->declare_queue(q));
  auto over_a_queue = f.transport->declare_stream(q, {});
  REQUIRE_FALSE(over_a_queue);
  CHECK(over_a_queue.error().code == bus::errc::invalid_configuration);

  REQUIRE(f.transport->declare_stream(s, {}));
  REQUIRE(
      f.transport->consume_stream(f.queue("r"), s, bus::stream_start::first(), 1, got.handler()));
  auto twice =
      f.transport->consume_stream(f.queue("r"), s, bus::stream_start::first(), 1, got.handler());
  REQUIRE_FALSE(twice);
  CHECK(twice.error().code == bus::errc::duplicate);
  auto no_room =
      f.transport->consume_stream(f.queue("r2"), s, bus::stream_start::first(), 0, got.handler());
  REQUIRE_FALSE(no_room);
  CHECK(no_room.error().code == bus::errc::invalid_configuration);
  f.transport->cancel(f.queue("r"));
}
