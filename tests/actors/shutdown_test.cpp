// Stopping a bus drains work in flight, gives back what it cannot finish,
// and leaves no actor behind.
#include <catch2/catch.hpp>

#include <spdlog/sinks/null_sink.h>

#include "bus/actor_handler.hpp"
#include "support/caf_fixture.hpp"
#include "support/holding_actor.hpp"

using namespace bus::test;

TEST_CASE_METHOD(caf_fixture, "stopping waits for a message in flight to finish") {
  auto counts = std::make_shared<holding_counts>();
  auto worker = spawn_holding_actor<order_placed>(sys, counts);
  auto running_before = sys.registry().running();
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2).handle_with_actor<order_placed>(worker, std::chrono::minutes(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  REQUIRE(counts->holding() == 1);

  bus->request_stop();
  sched.run();
  CHECK_FALSE(bus->stopped());
  // Sent by another process after the stop: it stays queued.
  bus::envelope late;
  late.message_id = "o-2";
  late.message_type = "order_placed";
  late.body = *bus->registry().make_body(order_placed{"o-2", 1});
  REQUIRE(transport->send("billing", std::move(late)));
  sched.run();
  CHECK(counts->received == 1);

  caf::anon_send(worker, release_atom::value);
  sched.run();
  CHECK(bus->stopped());
  auto s = stats(*bus, "billing");
  CHECK(s.handled == 1);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing") == 1);
  CHECK(transport->unacked("billing") == 0);
  CHECK(sys.registry().running() == running_before); // endpoint and consumers are gone
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "work that outlasts the drain timeout goes back to the queue, reported") {
  auto counts = std::make_shared<holding_counts>();
  auto worker = spawn_holding_actor<order_placed>(sys, counts);
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2)
      .drain_timeout(std::chrono::seconds(10))
      .handle_with_actor<order_placed>(worker, std::chrono::hours(1));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  REQUIRE(counts->holding() == 2);
  bus->request_stop();
  sched.run();
  sched.advance_time(std::chrono::seconds(9));
  sched.run();
  CHECK_FALSE(bus->stopped());
  sched.advance_time(std::chrono::seconds(1));
  sched.run();
  CHECK(bus->stopped());
  auto s = stats(*bus, "billing");
  CHECK(s.requeued == 2);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing") == 2);
  CHECK(log_count("stopped before message") == 2);
  // A late answer changes nothing: the delivery was given back already.
  caf::anon_send(worker, release_atom::value);
  caf::anon_send(worker, release_atom::value);
  sched.run();
  CHECK(counts->answered == 2);
  CHECK(stats(*bus, "billing").handled == 0);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "a stopped bus can be destroyed and its actor system shut down") {
  int handled = 0;
  {
    auto b = builder();
    b.endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) { ++handled; });
    });
    auto bus = start(b);
    REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
    // Destroying the bus asks its endpoints to stop, without blocking.
  }
  sched.run();
  CHECK(handled == 1);
  CHECK(sys.registry().running() == 0);
}

TEST_CASE("stop() on real threads returns once every endpoint has drained") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  std::atomic<int> handled{0};
  bus::bus_builder b{sys};
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>("order_placed");
  for (const auto* name : {"billing", "shipping"})
    b.endpoint(name, [&](bus::endpoint_builder& e) {
      e.slots(3).handle<order_placed>([&](const order_placed&) { ++handled; });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  for (int i = 0; i < 500; ++i)
    REQUIRE((*bus)->publish(order_placed{"o", 1}));
  (*bus)->stop();
  CHECK((*bus)->stopped());
  // Whatever was not handled is still in its queue: nothing is lost.
  auto left = transport->depth("billing") + transport->depth("shipping");
  CHECK(handled.load() + static_cast<int>(left) == 1000);
  CHECK(transport->unacked("billing") == 0);
  CHECK(transport->unacked("shipping") == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a bus reports itself stopped only once pending redeliveries are back in the queue") {
  auto b = builder();
  b.add_resilience([](bus::policy_builder& p) {
    p.on_any().redeliver({std::chrono::hours(1)}).jitter(false);
  });
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.slots(2).handle<order_placed>([](const order_placed&) { throw std::runtime_error("down"); });
  });
  auto bus = start(b);
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == 3);
  REQUIRE(transport->depth("billing") == 0);

  // Message by message, so the moment stopped() turns true is observed
  // exactly: by then the scheduler must have given its messages back.
  bus->request_stop();
  while (!bus->stopped() && sched.try_run_once()) {
  }
  REQUIRE(bus->stopped());
  CHECK(transport->depth("billing") == 3);
  CHECK(stats(*bus, "billing").pending_redelivery == 0);
}

TEST_CASE("stop() on real threads returns after the scheduler gave back what it held") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  std::atomic<int> attempts{0};
  bus::bus_builder b{sys};
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().redeliver({std::chrono::hours(1)}).jitter(false);
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(4).handle<order_placed>([&](const order_placed&) {
        ++attempts;
        throw std::runtime_error("down");
      });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  constexpr int sent = 200;
  for (int i = 0; i < sent; ++i)
    REQUIRE((*bus)->send("billing", order_placed{"o", 1}));
  (*bus)->stop();
  // Every message is either still waiting, or was attempted once and is
  // back from the scheduler; none is still on its way when stop() returns.
  auto s = *(*bus)->stats("billing");
  CHECK(s.pending_redelivery == 0);
  CHECK(transport->depth("billing") == static_cast<std::size_t>(sent));
  CHECK(transport->unacked("billing") == 0);
  CHECK(s.redeliveries_scheduled == static_cast<std::uint64_t>(attempts.load()));
}
