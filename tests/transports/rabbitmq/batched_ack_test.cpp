// Acknowledgements in batches (ack_window.hpp) against a real broker: the
// consuming thread coalesces acks with AMQP's `multiple` flag, and that must
// never settle a delivery the application has not acknowledged. Checked on
// the broker's own counts (rabbitmqctl list_queues: ready plus unacked) and
// by what comes back: a delivery held open or rejected in the middle of
// acknowledged ones is still the broker's to deliver again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>

#include "broker.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "support/eventually.hpp"
#include "support/delivery_collector.hpp"

using namespace std::chrono_literals;
using bus::test::delivery_collector;
using bus::test::eventually;

namespace {

bus::envelope acked_message(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "order_placed";
  env.body = bus::message_body::text(R"({"order_id":"o-1"})");
  return env;
}

// What the broker holds of `q`, ready and delivered-unacknowledged together.
long depth(const std::string& q) {
  auto all = bus::test::queue_depths();
  auto it = all.find(q);
  return it == all.end() ? -1 : it->second;
}

bool depth_becomes(const std::string& q, long n) {
  return eventually([&] { return depth(q) == n; }, 20s, 250ms);
}

bool no_unknown_tag(const bus::test::log_capture& log) {
  auto lines = log.lines();
  return std::none_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("unknown delivery tag") != std::string::npos
           || l.find("PRECONDITION_FAILED") != std::string::npos;
  });
}

} // namespace

TEST_CASE("acks coalesced around a delivery still open leave it outstanding on the broker",
          "[rabbitmq][batched_ack]") {
  auto s = bus::test::test_settings();
  bus::test::log_capture log;
  s.log = log.sink();
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("batched_open");
  REQUIRE(t->declare_queue(q));
  for (int i = 0; i < 100; ++i)
    REQUIRE(t->send(q, acked_message("m-" + std::to_string(i))));
  delivery_collector got;
  REQUIRE(t->consume(q, 200, got.handler()));
  REQUIRE(got.wait_for(100));
  auto first = got.items();
  // The first delivery's handler is still running; every later one is
  // acknowledged, from one thread, as fast as it can.
  for (std::size_t i = 1; i < first.size(); ++i)
    REQUIRE(t->ack(first[i].tag));
  // 99 settled, the open one still the broker's: a multiple ack that
  // covered it would leave 0.
  CHECK(depth_becomes(q, 1));
  // Still outstanding, so rejecting it is valid and brings it back.
  REQUIRE(t->reject(first[0].tag, /*requeue=*/true));
  REQUIRE(got.wait_for(101));
  auto again = got.items()[100];
  CHECK(again.message->message_id == first[0].message->message_id);
  CHECK(again.redelivered);
  REQUIRE(t->ack(again.tag));
  CHECK(depth_becomes(q, 0));
  CHECK(got.size() == 101);
  CHECK(no_unknown_tag(log));
}

TEST_CASE("a delivery rejected with requeue in the middle of acknowledged ones comes back, and "
          "only it",
          "[rabbitmq][batched_ack]") {
  auto s = bus::test::test_settings();
  bus::test::log_capture log;
  s.log = log.sink();
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("batched_reject");
  REQUIRE(t->declare_queue(q));
  for (int i = 0; i < 100; ++i)
    REQUIRE(t->send(q, acked_message("m-" + std::to_string(i))));
  delivery_collector got;
  REQUIRE(t->consume(q, 200, got.handler()));
  REQUIRE(got.wait_for(100));
  auto first = got.items();
  // One thread settles all of them in a burst, so that the consuming
  // thread takes many in one batch: acks, a reject, acks.
  for (std::size_t i = 0; i < first.size(); ++i) {
    auto settled = i == 50 ? t->reject(first[i].tag, /*requeue=*/true) : t->ack(first[i].tag);
    REQUIRE(settled);
  }
  REQUIRE(got.wait_for(101));
  auto again = got.items()[100];
  CHECK(again.message->message_id == "m-50");
  CHECK(again.redelivered);
  CHECK(depth_becomes(q, 1)); // only the redelivered one, unacknowledged
  REQUIRE(t->ack(again.tag));
  CHECK(depth_becomes(q, 0));
  CHECK(got.size() == 101);
  CHECK(no_unknown_tag(log));
}

TEST_CASE("a rejected delivery without requeue in the middle of acknowledged ones is dropped "
          "and the rest stay acknowledged",
          "[rabbitmq][batched_ack]") {
  auto t = bus::test::connect_transport();
  auto q = bus::test::unique_name("batched_drop");
  REQUIRE(t->declare_queue(q));
  for (int i = 0; i < 50; ++i)
    REQUIRE(t->send(q, acked_message("m-" + std::to_string(i))));
  delivery_collector got;
  REQUIRE(t->consume(q, 100, got.handler()));
  REQUIRE(got.wait_for(50));
  auto first = got.items();
  for (std::size_t i = 0; i < first.size(); ++i) {
    auto settled =
        i % 10 == 5 ? t->reject(first[i].tag, /*requeue=*/false) : t->ack(first[i].tag);
    REQUIRE(settled);
  }
  CHECK(depth_becomes(q, 0));
  // Closing requeues whatever was not settled: nothing comes back.
  t.reset();
  CHECK(depth(q) == 0);
}
