// Adaptive slots in the endpoint, on CAF's test coordinator and virtual
// time: the handler is an actor that answers only when the test says, so
// the test decides each delivery's latency and sees exactly how many run
// at once. How the limit moves is bus::vegas_limit's (core_tests
// [adaptive]); here: that the endpoint obeys it, feeds it, and shows it.
#include <catch2/catch.hpp>

#include "bus/actor_handler.hpp"
#include "support/caf_fixture.hpp"
#include "support/holding_actor.hpp"

using namespace bus::test;
using namespace std::chrono_literals;

namespace {

bus::adaptive_slots from_two_to_eight() {
  bus::adaptive_slots a;
  a.min = 2;
  a.max = 8;
  a.initial = 2;
  // Thresholds of their own, not the defaults: one step of beta takes the
  // limit from 2 to its max, so the test sees both ends in a few releases.
  a.alpha = 3;
  a.beta = 6;
  a.threshold = 1;
  return a;
}

} // namespace

TEST_CASE_METHOD(caf_fixture, "adaptive slots run at most their limit at once, and it follows the "
                              "handler's latency") {
  auto counts = std::make_shared<holding_counts>();
  auto worker = spawn_holding_actor<order_placed>(sys, counts);
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(from_two_to_eight()).handle_with_actor<order_placed>(worker, 1h);
  });
  auto bus = start(b);
  for (int i = 0; i < 40; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  sched.run();
  CHECK(counts->holding() == 2);
  CHECK(stats(*bus, "billing").concurrency_limit == 2);
  CHECK(log_count("endpoint 'billing' started with adaptive slots: 2 to 8, from 2") == 1);

  auto release_one = [&] {
    caf::anon_send(worker, release_atom::value);
    sched.run();
  };

  SECTION("it grows to its max while deliveries at the full limit take no longer than the least") {
    sched.advance_time(5ms);
    release_one(); // the first latency: 5 ms, the least there is so far
    release_one(); // 5 ms again, begun with the limit full: nothing waits
    CHECK(stats(*bus, "billing").concurrency_limit == 8);
    CHECK(counts->holding() == 8);
    CHECK(log_count("endpoint 'billing' now runs up to 8 handlers at once (adaptive slots, 2 to "
                    "8)")
          == 1);

    SECTION("and shrinks when they take nine times as long, never running more than it allows") {
      sched.advance_time(45ms);
      for (int i = 0; i < 8; ++i) {
        release_one();
        auto limit = stats(*bus, "billing").concurrency_limit;
        CHECK(counts->holding() <= limit);
      }
      // 8 x (1 - 5 / 45) = 8 of 8 waited: more than beta (6), so it fell.
      CHECK(stats(*bus, "billing").concurrency_limit < 8);
      CHECK(stats(*bus, "billing").concurrency_limit >= 2);
      // Changes within a minute of the last line are not logged.
      CHECK(log_count("handlers at once (adaptive slots") == 1);
    }
  }

  // Everything handled, so that the bus stops with nothing in flight.
  while (counts->holding() > 0)
    release_one();
  CHECK(stats(*bus, "billing").handled == 40);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "adaptive slots that cannot work stop the build with the reason") {
  bus::adaptive_slots bad;
  bad.min = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(bad).handle<order_placed>([](const order_placed&) {});
  });
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(to_string(built.error()),
             Catch::Contains("endpoint 'billing': adaptive slots: its min must be at least 1"));
}

TEST_CASE_METHOD(caf_fixture, "fixed slots show their count as the endpoint's limit") {
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(3).handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  CHECK(stats(*bus, "billing").concurrency_limit == 3);
}
