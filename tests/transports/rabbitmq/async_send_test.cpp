// The RabbitMQ transport's asynchronous sends against a real broker, seen
// through a relay the test can pause, drop and cut (tcp_relay.hpp): a send
// never waits for the broker, a thousand are confirmed in flight at once on
// one connection, and every completion runs exactly once whatever happens
// to the broker: confirmed, timed out, out of reach, or the transport
// destroyed first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "amqp_confirm_edit.hpp"
#include "broker.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "raw_client.hpp"
#include "support/delivery_collector.hpp"
#include "support/eventually.hpp"
#include "support/tcp_relay.hpp"
#include "transports/completion_log.hpp"

using namespace std::chrono_literals;
using bus::test::completion_log;
using bus::test::tcp_relay;

namespace {

bus::envelope sent_message(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "order_placed";
  env.body = bus::message_body::text(R"({"order_id":"o-1"})");
  return env;
}

std::uint16_t broker_port() {
  return bus::test::test_settings().port;
}

// The test broker's settings, reached through `relay`.
bus::rabbitmq_settings through(const tcp_relay& relay) {
  auto s = bus::test::test_settings();
  s.host = "127.0.0.1";
  s.port = relay.port();
  s.reconnect_delay_min = 100ms;
  s.reconnect_delay_max = 200ms;
  return s;
}

} // namespace

TEST_CASE("1,000 asynchronous sends from one thread are in flight at once, all confirmed and "
          "all on the queue",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  completion_log done; // outlives the transport, which may call it until destroyed
  auto t = bus::test::connect_transport(through(relay));
  auto q = bus::test::unique_name("async_1000");
  REQUIRE(t->declare_queue(q));
  // Nothing reaches the broker now, so nothing can be confirmed: a send
  // that waited for its confirm would hang here.
  relay.pause();
  for (int i = 0; i < 1000; ++i) {
    auto id = "m-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  CHECK(done.total() == 0);
  relay.resume();
  REQUIRE(done.wait_for(1000));
  CHECK(done.succeeded() == 1000);
  CHECK(done.each_exactly_once());
  CHECK(t->message_count(q).value() == 1000);
}

// Confirms late because the network paused (or the broker was slow) are
// not a stalled channel: publishing everything in flight again on a new
// channel would put each message on the queue twice (issue 22, point 4).
TEST_CASE("sends whose confirms come late because the network paused past the stall threshold "
          "are on the queue once",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  auto s = through(relay);
  s.confirm_stall_timeout = 1s;
  bus::test::log_capture log;
  s.log = log.sink();
  completion_log done;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_slow_confirms");
  REQUIRE(t->declare_queue(q));
  relay.pause();
  for (int i = 0; i < 100; ++i) {
    auto id = "m-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  // The network's pause itself, half as long again as the threshold (not
  // a wait for work to finish: nothing can finish while it lasts).
  std::this_thread::sleep_for(1500ms);
  CHECK(done.total() == 0);
  relay.resume();
  REQUIRE(done.wait_for(100, 5s));
  CHECK(done.succeeded() == 100);
  CHECK(done.each_exactly_once());
  CHECK(t->message_count(q).value() == 100);
  // The channel was suspected, and the suspicion cleared by the confirms.
  auto logged = [&log](const std::string& text) {
    auto lines = log.lines();
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  CHECK(logged("asking on a new channel"));
  CHECK_FALSE(logged("unconfirmed messages again"));
  CHECK(t->health().republished == 0);
}

TEST_CASE("a send the broker does not confirm within operation_timeout fails, and later sends "
          "go through",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  auto s = through(relay);
  s.operation_timeout = 1s;
  completion_log done;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_timeout");
  REQUIRE(t->declare_queue(q));
  relay.pause();
  for (int i = 0; i < 10; ++i) {
    auto id = "late-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  // Not a hang: each fails by its deadline, while the relay still holds
  // the connection open.
  REQUIRE(done.wait_for(10, 5s));
  CHECK(done.failed_with(bus::errc::transport_failure) == 10);
  CHECK_THAT(done.outcome("late-0").error().message, Catch::Contains("did not confirm"));
  relay.resume();
  t->async_send(q, sent_message("after"), done.make("after"));
  REQUIRE(done.wait_for(11, 5s));
  CHECK(done.outcome("after"));
  CHECK(done.each_exactly_once());
}

TEST_CASE("asynchronous sends fail, not hang, while the broker is out of reach",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  auto s = through(relay);
  s.operation_timeout = 1s;
  completion_log done;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_unreachable");
  REQUIRE(t->declare_queue(q));
  relay.pause();
  for (int i = 0; i < 100; ++i) { // on the wire when the broker goes
    auto id = "before-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  relay.cut();
  for (int i = 0; i < 100; ++i) { // while it is gone
    auto id = "after-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  REQUIRE(done.wait_for(200, 10s));
  CHECK(done.failed_with(bus::errc::transport_failure) == 200);
  CHECK(done.each_exactly_once());
  auto blocking = t->send(q, sent_message("blocking"));
  REQUIRE_FALSE(blocking);
  CHECK(blocking.error().code == bus::errc::transport_failure);
}

TEST_CASE("sends unconfirmed when the connection drops are published again and complete on the "
          "next one",
          "[rabbitmq][async][reconnect]") {
  tcp_relay relay(broker_port());
  completion_log done;
  auto t = bus::test::connect_transport(through(relay));
  auto q = bus::test::unique_name("async_republish");
  REQUIRE(t->declare_queue(q));
  relay.pause();
  for (int i = 0; i < 200; ++i) {
    auto id = "m-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  // The connection dies with all 200 unconfirmed (none reached the broker).
  relay.drop();
  REQUIRE(done.wait_for(200));
  CHECK(done.succeeded() == 200);
  CHECK(done.each_exactly_once());
  CHECK(t->reconnects() >= 1);
  CHECK(t->message_count(q).value() == 200);
  // Those the lost connection had taken count as published again; any
  // still waiting for the I/O thread at the loss went out once.
  auto republished = t->health().republished;
  CHECK(republished > 0);
  CHECK(republished <= 200);
}

TEST_CASE("destroying the transport with sends in flight completes each of them with a failure",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  auto s = through(relay);
  s.operation_timeout = 2s; // the polite close waits that long on the paused relay
  completion_log done;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_destroyed");
  REQUIRE(t->declare_queue(q));
  relay.pause();
  for (int i = 0; i < 500; ++i) {
    auto id = "m-" + std::to_string(i);
    t->async_send(q, sent_message(id), done.make(id));
  }
  t.reset();
  // Before the destructor returned, not some time later.
  CHECK(done.total() == 500);
  CHECK(done.failed_with(bus::errc::transport_failure) == 500);
  CHECK(done.each_exactly_once());
}

// A completion that holds the transport's owner (a request's client holds
// the transport) can hold its last reference: the transport then goes on
// its own publishing thread, once the confirm came. It used to join that
// very thread there, and std::terminate ended the process (issue 22,
// point 6); ctest runs this case in a process of its own.
TEST_CASE("a transport whose last reference its own completion holds closes once the confirm "
          "comes, and the process goes on",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port());
  auto t = bus::test::connect_transport(through(relay));
  std::weak_ptr<bus::rabbitmq_transport> left = t;
  auto q = bus::test::unique_name("async_owner");
  REQUIRE(t->declare_queue(q));
  std::atomic<bool> confirmed{false};
  relay.pause();
  t->async_send(q, sent_message("m-1"), [&confirmed, owner = t](bus::result<void> sent) {
    confirmed = static_cast<bool>(sent);
  });
  t.reset();
  REQUIRE_FALSE(left.expired()); // the completion holds the transport, and the relay its confirm
  relay.resume();
  CHECK(bus::test::eventually([&] { return left.expired(); }, 20s));
  CHECK(confirmed);
}

// A nack says the broker did not take the message, for now: a queue at its
// length limit (overflow reject-publish), or a quorum queue without a
// leader, or one that refused this channel while its leader moved (a
// channel that registered during an election stays refused on RabbitMQ
// 3.10). The publisher publishes it again, on a new channel, until the
// send's deadline; only then does the send fail, and it says why.
TEST_CASE("a send the broker refuses with basic.nack is published again until it is taken, or "
          "fails at its deadline naming the refusal",
          "[rabbitmq][async]") {
  // A queue that holds one message and refuses publishes beyond it: the
  // broker nacks them (overflow reject-publish). Set by a policy named
  // after the queue, so that no other queue is touched.
  auto q = bus::test::unique_name("async_nack");
  auto policy = "bus-test-" + q;
  REQUIRE(bus::test::rabbitmqctl("set_policy --apply-to queues '" + policy + "' '^" + q + "$' "
                                 + "'{\"max-length\":1,\"overflow\":\"reject-publish\"}'")
          == 0);
  completion_log done;
  bus::test::log_capture log;
  auto s = bus::test::test_settings();
  s.operation_timeout = 3s;
  s.reconnect_delay_min = 50ms;
  s.reconnect_delay_max = 200ms;
  s.log = log.sink();
  auto t = bus::test::connect_transport(s);
  REQUIRE(t->declare_queue(q));
  t->async_send(q, sent_message("m-1"), done.make("m-1"));
  REQUIRE(done.wait_for(1));
  CHECK(done.outcome("m-1"));

  // The queue is full: m-2 is refused, and waits instead of failing.
  t->async_send(q, sent_message("m-2"), done.make("m-2"));
  auto refused = [&] {
    auto lines = log.lines();
    return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("refused") != std::string::npos && l.find("again") != std::string::npos;
    });
  };
  REQUIRE(bus::test::eventually(refused, 3s));
  CHECK(done.total() == 1);
  // Room on the queue: m-1 is consumed, and m-2 goes in on a later attempt.
  bus::test::delivery_collector got;
  REQUIRE(t->consume(q, 1, [&](bus::delivery d) {
    auto tag = d.tag;
    got.handler()(std::move(d));
    (void)t->ack(tag);
  }));
  REQUIRE(done.wait_for(2, 3s));
  CHECK(done.outcome("m-2"));
  REQUIRE(got.wait_for(2, 5s));
  CHECK(got.items()[0].message->message_id == "m-1");
  CHECK(got.items()[1].message->message_id == "m-2");
  t->cancel(q);

  // Never room: the send fails at its deadline and names the refusal.
  REQUIRE(t->send(q, sent_message("m-3"))); // fills the queue again
  auto started = std::chrono::steady_clock::now();
  auto blocking = t->send(q, sent_message("m-4"));
  auto waited = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(blocking);
  CHECK(blocking.error().code == bus::errc::transport_failure);
  CHECK_THAT(blocking.error().message, Catch::Contains("basic.nack"));
  CHECK(waited >= 2s); // it waited for room (3 s, less the time the request queued)
  CHECK(t->message_count(q).value() == 1);
  CHECK(done.each_exactly_once());
  bus::test::rabbitmqctl("clear_policy '" + policy + "'");
}

// The deadline of a refused send may fall while its next attempt waits for
// its confirm: the broker refused it, and may or may not have taken the
// last attempt. The send's error names the refusal (a full queue says
// why the send failed), and that the last attempt may still arrive. This
// is the race that made the test above fail at random when the deadline
// fell between a republish and its nack.
TEST_CASE("a refused send whose next attempt is unconfirmed at its deadline fails naming the "
          "refusal, and that the last attempt may still arrive",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port(), [] { return bus::test::refusal_then_silence{}; });
  bus::test::log_capture log;
  auto s = through(relay);
  s.operation_timeout = 2s;
  s.confirm_stall_timeout = 1500ms; // the lost confirm is not judged before the deadline
  s.reconnect_delay_min = 50ms;
  s.reconnect_delay_max = 100ms;
  s.log = log.sink();
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_refused_unconfirmed");
  REQUIRE(t->declare_queue(q));
  auto sent = t->send(q, sent_message("m-1"));
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == bus::errc::transport_failure);
  CHECK_THAT(sent.error().message, Catch::Contains("refused message m-1")
                                       && Catch::Contains("basic.nack")
                                       && Catch::Contains("may still arrive"));
  auto lines = log.lines();
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("refused message m-1") != std::string::npos
           && l.find("again") != std::string::npos;
  }));
}

// A failover refuses some publishes (the new leader's election) and loses
// the confirms of others (with the old leader). The refusals' round waited
// for the confirms in flight, and the stall judge would not judge while
// refusals waited: every send failed at operation_timeout (issue 22,
// point 5). The edit makes both happen in one round on a live connection.
TEST_CASE("a refusal and a lost confirm in one round are both published again, in their order, "
          "long before operation_timeout",
          "[rabbitmq][async]") {
  tcp_relay relay(broker_port(), [] { return bus::test::failover_confirms{}; });
  auto s = through(relay);
  s.confirm_stall_timeout = 500ms;
  s.operation_timeout = 20s;
  completion_log done;
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("async_failover");
  REQUIRE(t->declare_queue(q));
  t->async_send(q, sent_message("first"), done.make("first"));
  t->async_send(q, sent_message("second"), done.make("second"));
  // Judged after 500 ms, asked, moved 250 ms after the answer.
  REQUIRE(done.wait_for(2, 5s));
  CHECK(done.succeeded() == 2);
  CHECK(done.order() == std::vector<std::string>{"first", "second"});
  CHECK(t->health().republished >= 1);
  // The broker took both the first time (the test hid that), and both
  // again from the new channel, in the order they were sent.
  std::vector<std::string> on_queue;
  for (int i = 0; i < 4; ++i)
    on_queue.push_back(bus::test::raw_get(bus::test::test_settings(), q, true).message_id);
  CHECK(on_queue == std::vector<std::string>{"first", "second", "first", "second"});
  CHECK_FALSE(bus::test::raw_get(bus::test::test_settings(), q, true).found);
  CHECK(done.each_exactly_once());
}

TEST_CASE("a delivery stops being settleable once its connection is lost, and its redelivery is",
          "[rabbitmq][reconnect]") {
  tcp_relay relay(broker_port());
  auto t = bus::test::connect_transport(through(relay));
  auto q = bus::test::unique_name("stale_delivery");
  REQUIRE(t->declare_queue(q));
  REQUIRE(t->send(q, sent_message("m-1")));
  bus::test::delivery_collector got;
  REQUIRE(t->consume(q, 1, got.handler()));
  REQUIRE(got.wait_for(1));
  auto first = got.items()[0].tag;
  CHECK(t->settleable(first));

  relay.drop(); // the connections die; the relay takes new ones
  REQUIRE(bus::test::eventually([&] { return !t->settleable(first); }, 10s));
  // The broker delivers the message again on the new connection: that one
  // can be settled, the old one never again.
  REQUIRE(got.wait_for(2, 20s));
  auto second = got.items()[1];
  CHECK(second.redelivered);
  CHECK(second.message->message_id == "m-1");
  CHECK(t->settleable(second.tag));
  CHECK_FALSE(t->ack(first));
  REQUIRE(t->ack(second.tag));
  CHECK_FALSE(t->settleable(second.tag)); // settled: no longer outstanding
}

TEST_CASE("deliveries that went stale with their connection are forgotten: only the new ones "
          "count as unsettled",
          "[rabbitmq][reconnect]") {
  tcp_relay relay(broker_port());
  auto t = bus::test::connect_transport(through(relay));
  auto q = bus::test::unique_name("stale_forgotten");
  REQUIRE(t->declare_queue(q));
  for (int i = 0; i < 5; ++i)
    REQUIRE(t->send(q, sent_message("m-" + std::to_string(i))));
  bus::test::delivery_collector got; // keeps every delivery unsettled
  REQUIRE(t->consume(q, 10, got.handler()));
  REQUIRE(got.wait_for(5));
  CHECK(t->unsettled() == 5);

  relay.drop(); // the five go stale; the broker delivers them again
  REQUIRE(got.wait_for(10, 20s));
  CHECK(t->unsettled() == 5);
  for (std::size_t i = 5; i < 10; ++i)
    REQUIRE(t->ack(got.items()[i].tag));
  CHECK(t->unsettled() == 0);
  CHECK_FALSE(t->ack(got.items()[0].tag)); // stale: refused, as before
}

TEST_CASE("a stream offset that freezes: a stream's delivery stays settleable through a lost "
          "connection, and the reader goes on past it without reading it again",
          "[rabbitmq][reconnect][stream]") {
  tcp_relay relay(broker_port());
  auto t = bus::test::connect_transport(through(relay));
  auto stream = bus::test::unique_name("stale_stream");
  REQUIRE(t->declare_stream(stream, {}));
  auto producer = bus::test::connect_transport(); // past the relay
  for (const char* id : {"s-1", "s-2", "s-3"})
    REQUIRE(producer->send(stream, sent_message(id)));
  bus::test::delivery_collector got; // settles nothing itself
  REQUIRE(t->consume_stream(bus::test::unique_name("reader"), stream, bus::stream_start::first(),
                            1, got.handler()));
  REQUIRE(got.wait_for(1));
  auto first = got.items()[0].tag;

  relay.drop(); // the channel dies with its connection; the reader consumes again
  REQUIRE(got.wait_for(2, 20s));
  // Nothing delivers s-1 again: its ending must still count, so it can be
  // settled (the ack goes nowhere), and the next one came without it.
  CHECK(t->settleable(first));
  CHECK(t->ack(first));
  REQUIRE(t->ack(got.items()[1].tag));
  REQUIRE(got.wait_for(3, 20s));
  REQUIRE(t->ack(got.items()[2].tag));
  std::vector<std::string> ids;
  for (const auto& d : got.items())
    ids.push_back(d.message->message_id);
  CHECK(ids == std::vector<std::string>{"s-1", "s-2", "s-3"});
  CHECK(t->unsettled() == 0);
}

TEST_CASE("a silent broker: a consuming connection that hears nothing for two heartbeats is "
          "given up and made again, and a message sent meanwhile arrives once the broker answers",
          "[rabbitmq][reconnect]") {
  tcp_relay relay(broker_port());
  auto settings = through(relay);
  settings.heartbeat = 2s;
  auto t = bus::test::connect_transport(settings);
  auto q = bus::test::unique_name("silent_consumer");
  REQUIRE(t->declare_queue(q));
  bus::test::delivery_collector got;
  REQUIRE(t->consume(q, 1, got.handler()));

  relay.pause(); // the connections stay open; nothing comes back, heartbeats included
  auto paused = std::chrono::steady_clock::now();
  REQUIRE(bus::test::eventually([&] { return !t->health().connected; }, 15s));
  // Two heartbeats of silence (rabbitmq-c's rule), and a loaded machine's slack.
  CHECK(std::chrono::steady_clock::now() - paused < 2 * 2s + 3s);
  auto producer = bus::test::connect_transport();
  REQUIRE(producer->send(q, sent_message("while-silent")));

  relay.resume();
  REQUIRE(got.wait_for(1, 30s));
  CHECK(got.items()[0].message->message_id == "while-silent");
  // Both connections come back (the publishing one after its own backoff).
  CHECK(bus::test::eventually([&] { return t->health().connected; }, 20s));
  CHECK(t->reconnects() >= 1);
}
