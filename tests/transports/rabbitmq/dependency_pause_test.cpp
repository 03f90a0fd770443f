// A dependency breaker on a real broker: while it is open the endpoint
// takes nothing more, and its messages stay on the queue (the prefetched
// ones unacknowledged, the rest ready), none on the error queue; a stop
// gives the held ones back, so all of them are still there.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

struct db_error : std::runtime_error {
  db_error() : std::runtime_error("inventory-db unavailable") {}
};

// Wakes the test when the endpoint pauses.
struct pause_watch {
  std::mutex mutex;
  std::condition_variable changed;
  bool paused = false;

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      if (e.kind != bus::event_kind::endpoint_paused)
        return;
      std::lock_guard<std::mutex> guard(mutex);
      paused = true;
      changed.notify_all();
    };
  }

  bool wait() {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 30s, [&] { return paused; });
  }
};

} // namespace

TEST_CASE("on RabbitMQ an open dependency breaker leaves the endpoint's messages on its queue") {
  constexpr int messages = 20;
  constexpr std::size_t slots = 2;
  auto endpoint = bus::test::unique_name("stock");
  pause_watch watch;
  std::atomic<int> attempts{0};
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::dependency_breaker_settings db;
  db.consecutive_failures = 2;
  db.failure_rate = 0;
  db.open_wait = 1h; // no probe during the test
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport())
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe(watch.observer())
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .dependency("inventory-db", db)
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.slots(slots)
        .add_resilience([](bus::policy_builder& p) { p.on<db_error>().trips("inventory-db"); })
        .handle<order_placed>([&](const order_placed&) {
          ++attempts;
          throw db_error();
        });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus.send(endpoint, order_placed{"o-" + std::to_string(i), 1}));
  REQUIRE(watch.wait());

  // rabbitmqctl takes about a second: long enough for a paused endpoint
  // that was not paused to run through the queue many times over.
  auto depths = bus::test::queue_depths();
  CHECK(depths[endpoint] == messages); // ready and unacknowledged together
  CHECK(depths[endpoint + "_error"] == 0);
  // The 2 failures in a row that opened it, and at most one per other slot
  // already under way.
  CHECK(attempts.load() >= 2);
  CHECK(attempts.load() <= 2 + static_cast<int>(slots) - 1);
  auto s = *bus.stats(endpoint);
  CHECK(s.dependency_paused);
  CHECK(s.handled == 0);
  CHECK(s.dead_lettered == 0);
  CHECK(s.redeliveries_scheduled == 0);
  CHECK(s.held_back >= static_cast<std::uint64_t>(attempts.load())); // and any held before running
  CHECK(s.in_flight <= static_cast<std::int64_t>(slots)); // what the prefetch let in

  bus.stop();
  CHECK(bus::test::queue_depths()[endpoint] == messages); // the held ones went back
  CHECK(bus.stats(endpoint)->requeued == static_cast<std::uint64_t>(bus.stats(endpoint)->received));
}
