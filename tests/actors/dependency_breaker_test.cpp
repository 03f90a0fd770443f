// Dependency breakers on virtual time: one breaker shared by two endpoints
// pauses both during a database outage, lets one probe through per wait,
// and everything is handled after recovery, with nothing on an error queue.
#include <catch2/catch.hpp>

#include <deque>
#include <string>

#include <caf/all.hpp>

#include "bus/actor_handler.hpp"
#include "bus/handler_actor_error.hpp"
#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"
#include "support/shutdown_anyway.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

struct db_error : std::runtime_error {
  db_error() : std::runtime_error("inventory-db unavailable") {}
};

struct validation_error : std::runtime_error {
  validation_error() : std::runtime_error("bad order") {}
};

// The database the handlers call, down or up, counting the calls made
// while it is down.
struct database {
  bool down = false;
  int calls_while_down = 0;
  void call() {
    if (down) {
      ++calls_while_down;
      throw db_error();
    }
  }
};

bus::dependency_breaker_settings inventory_settings() {
  bus::dependency_breaker_settings s; // the defaults: 5 in a row, 50% of 20 over 10 s
  s.open_wait = 5s;
  return s;
}

using answer_atom = caf::atom_constant<caf::atom("answer")>;

// Serves T, keeping each request until the test answers it, oldest first:
// (answer_atom, "") succeeds, any other text fails the attempt with it.
template <class T>
caf::actor spawn_answering_actor(caf::actor_system& sys, std::shared_ptr<int> received) {
  return sys.spawn([received](caf::event_based_actor* self) -> caf::behavior {
    auto held = std::make_shared<std::deque<caf::response_promise>>();
    return {
      [=](bus::handle_atom, const T&) -> caf::result<void> {
        ++*received;
        held->push_back(self->make_response_promise());
        return caf::delegated<void>{};
      },
      [=](answer_atom, const std::string& failure) {
        if (held->empty())
          return;
        auto reply = held->front();
        held->pop_front();
        if (failure.empty())
          reply.deliver(caf::unit);
        else
          reply.deliver(caf::make_error(caf::sec::runtime_error, failure));
      },
    };
  });
}

// A rule's filter: the actor's answer named this failure.
auto says(std::string text) {
  return [text](const bus::handler_actor_error& e) {
    return std::string(e.what()).find(text) != std::string::npos;
  };
}

} // namespace

TEST_CASE("a 5-minute database outage pauses both endpoints sharing the breaker, loses nothing "
          "and spends no attempt beyond the probes") {
  constexpr int per_endpoint = 500;
  constexpr int slots = 2;
  bus::testing::harness h;
  auto db = std::make_shared<database>();
  db->down = true;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .dependency("inventory-db", inventory_settings())
    .add_resilience([](bus::policy_builder& p) {
      p.on<db_error>().trips("inventory-db").retry(2, 10ms).jitter(false).then_redeliver({30min});
      p.on_any().dead_letter();
    })
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.slots(slots).handle<order_placed>([db](const order_placed&) { db->call(); });
    })
    .endpoint("invoices", [&](bus::endpoint_builder& e) {
      e.slots(slots).handle<invoice_requested>([db](const invoice_requested&) { db->call(); });
    });
  auto& bus = h.start(b);
  for (int i = 0; i < per_endpoint; ++i) {
    REQUIRE(bus.send("orders", order_placed{"o-" + std::to_string(i), 1}));
    REQUIRE(bus.send("invoices", invoice_requested{"i-" + std::to_string(i), {}}));
  }
  h.run();
  CHECK(db->calls_while_down == 2 * slots); // one attempt per slot, 4 failures in a row
  h.advance(10ms); // the first immediate retry is the 5th failure in a row: the breaker opens
  const int before_trip = db->calls_while_down;
  CHECK(before_trip == 5);
  // One trip pauses both endpoints; what was in flight went back unharmed.
  CHECK(h.events_of(event_kind::endpoint_paused).size() == 2);
  for (const char* name : {"orders", "invoices"}) {
    auto s = h.stats(name);
    CHECK(s.dependency_paused);
    CHECK(s.dependency_pauses == 1);
    // Held by the endpoint, not settled: one delivery per slot, and in
    // memory one more waiting. None runs: no slot is busy.
    CHECK(s.in_flight == 2 * slots);
    CHECK(s.busy_slots == 0);
  }
  CHECK(h.stats("orders").held_back + h.stats("invoices").held_back == 2 * slots);

  h.advance(5min - 10ms); // the rest of the outage
  auto probes = h.stats("orders").probes + h.stats("invoices").probes;
  // A probe every 5 s after the trip, each failing and reopening the breaker.
  CHECK(probes == 59);
  CHECK(db->calls_while_down - before_trip == static_cast<int>(probes));
  // The messages stay on their queues; nothing failed for good or was rescheduled.
  CHECK(h.queue("orders").size() == per_endpoint - 2 * slots);
  CHECK(h.queue("invoices").size() == per_endpoint - 2 * slots);
  for (const char* name : {"orders", "invoices"}) {
    auto s = h.stats(name);
    CHECK(s.dead_lettered == 0);
    CHECK(s.redeliveries_scheduled == 0);
    CHECK(s.immediate_retries <= 2 * slots); // only before the trip
    CHECK(s.handled == 0);
    CHECK(h.error_queue(name).empty());
  }

  db->down = false;
  h.advance(5s); // the next probe succeeds: closed, both endpoints resume
  CHECK(h.stats("orders").probes + h.stats("invoices").probes == probes + 1);
  CHECK(h.events_of(event_kind::endpoint_resumed).size() == 2);
  h.advance_until_idle();
  for (const char* name : {"orders", "invoices"}) {
    auto s = h.stats(name);
    CHECK_FALSE(s.dependency_paused);
    CHECK(s.handled == static_cast<std::uint64_t>(per_endpoint));
    CHECK(s.dead_lettered == 0);
    CHECK(s.discarded == 0);
    CHECK(s.redeliveries_scheduled == 0);
    CHECK(s.in_flight == 0);
    CHECK(h.error_queue(name).empty());
    CHECK(h.queue(name).empty());
  }
  CHECK(db->calls_while_down == before_trip + static_cast<int>(probes));
}

TEST_CASE("a failure the rules do not count against the dependency follows its policy and "
          "never pauses the endpoint") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .dependency("inventory-db", inventory_settings())
    .add_resilience([](bus::policy_builder& p) {
      p.on<db_error>().trips("inventory-db").dead_letter();
      p.on<validation_error>().dead_letter();
    })
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([](const order_placed&) { throw validation_error(); });
    });
  auto& bus = h.start(b);
  for (int i = 0; i < 20; ++i)
    REQUIRE(bus.send("orders", order_placed{"o-" + std::to_string(i), 1}));
  h.advance_until_idle();
  auto s = h.stats("orders");
  CHECK(s.dead_lettered == 20);
  CHECK(s.dependency_pauses == 0);
  CHECK(s.held_back == 0);
}

TEST_CASE("an endpoint that declares a dependency pauses for it though its own handler never "
          "fails") {
  bus::testing::harness h;
  auto db = std::make_shared<database>();
  db->down = true;
  int reports = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .dependency("inventory-db", inventory_settings())
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.add_resilience([](bus::policy_builder& p) { p.on<db_error>().trips("inventory-db"); })
        .handle<order_placed>([db](const order_placed&) { db->call(); });
    })
    .endpoint("reports", [&](bus::endpoint_builder& e) {
      e.depends_on("inventory-db").handle<invoice_requested>([&](const invoice_requested&) {
        ++reports;
      });
    });
  auto& bus = h.start(b);
  for (int i = 0; i < 5; ++i)
    REQUIRE(bus.send("orders", order_placed{"o-" + std::to_string(i), 1}));
  h.run();
  // A rule that only trips gives each failure back unharmed; the 5th opens it.
  CHECK(h.stats("orders").held_back == 5);
  CHECK(h.stats("orders").dead_lettered == 0);
  CHECK(h.stats("reports").dependency_paused);
  REQUIRE(bus.send("reports", invoice_requested{"i-1", {}}));
  h.advance(1s);
  CHECK(reports == 0);
  CHECK(h.stats("reports").in_flight == 1); // waits, untouched
  db->down = false;
  h.advance(5s); // the probe (from either endpoint) succeeds
  h.advance_until_idle();
  CHECK(reports == 1);
  CHECK(h.stats("orders").handled == 5);
}

TEST_CASE("a dependency that the bus does not declare is a configuration mistake, named") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .dependency("inventory-db", inventory_settings())
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.depends_on("payments-api")
        .add_resilience(
          [](bus::policy_builder& p) { p.on<db_error>().trips("inventroy-db").dead_letter(); })
        .handle<order_placed>([](const order_placed&) {});
    });
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message,
             Catch::Contains("endpoint 'orders' depends on 'payments-api', which the bus does not "
                             "declare"));
  CHECK_THAT(built.error().message,
             Catch::Contains("endpoint 'orders' depends on 'inventroy-db', which the bus does not "
                             "declare"));
}

TEST_CASE("dependency settings out of range are configuration mistakes, named") {
  bus::testing::harness h;
  bus::dependency_breaker_settings s;
  s.failure_rate = 1.5;
  s.open_wait = 0s;
  auto b = h.builder();
  b.message<order_placed>("order_placed").dependency("inventory-db", s);
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message, Catch::Contains("dependency 'inventory-db': failure_rate"));
  CHECK_THAT(built.error().message, Catch::Contains("dependency 'inventory-db': open_wait"));
}

TEST_CASE("a message held back for a dependency while its endpoint stops goes back to its queue, "
          "and the stop ends within the drain timeout") {
  bus::testing::harness h;
  auto settings = inventory_settings();
  SECTION("the failure opens the breaker: the endpoint pauses") { settings.consecutive_failures = 1; }
  SECTION("the rule only trips and the breaker stays closed") {}
  int runs = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .dependency("inventory-db", settings)
    .add_resilience([](bus::policy_builder& p) { p.on<db_error>().trips("inventory-db"); })
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.slots(1).drain_timeout(10s).handle<order_placed>([&](const order_placed&) {
        ++runs;
        // The stop comes while the handler runs (asked from inside it, so
        // that on the test coordinator it lands exactly then).
        h.bus().request_stop();
        throw db_error();
      });
    });
  auto& bus = h.start(b);
  bus::test::shutdown_anyway guard(h.system(), [&] { return bus.stopped(); });
  REQUIRE(bus.send("orders", order_placed{"o-1", 1}));
  h.run();
  h.advance(10s - 1ms); // within the drain timeout
  CHECK(bus.stopped());
  CHECK(runs == 1); // never attempted again during the stop
  auto s = h.stats("orders");
  CHECK(s.held_back == 1);
  CHECK(s.requeued == 1);
  CHECK(s.handled == 0);
  CHECK(s.in_flight == 0);
  CHECK(h.transport().unacked("orders") == 0);
  CHECK(h.queue("orders").size() == 1);
}

TEST_CASE("an endpoint gives back only the probes it took, so a breaker shared with another "
          "endpoint never has two probes out") {
  bus::testing::harness h;
  auto one_failure = inventory_settings();
  one_failure.consecutive_failures = 1;
  auto orders_calls = std::make_shared<int>(0);
  auto invoices_calls = std::make_shared<int>(0);
  auto orders_actor = spawn_answering_actor<order_placed>(h.system(), orders_calls);
  auto invoices_actor = spawn_answering_actor<invoice_requested>(h.system(), invoices_calls);
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .dependency("cache", one_failure)
    .dependency("db", one_failure)
    // Orders needs the cache and the database; invoices the database only.
    .endpoint("orders", [&](bus::endpoint_builder& e) {
      e.slots(1)
        .add_resilience([](bus::policy_builder& p) {
          p.on<bus::handler_actor_error>(says("cache down")).trips("cache");
          p.on<bus::handler_actor_error>(says("db down")).trips("db");
          p.on_any().dead_letter();
        })
        .handle_with_actor<order_placed>(orders_actor, 1h);
    })
    .endpoint("invoices", [&](bus::endpoint_builder& e) {
      e.slots(1)
        .add_resilience([](bus::policy_builder& p) {
          p.on<bus::handler_actor_error>(says("db down")).trips("db");
          p.on_any().dead_letter();
        })
        .handle_with_actor<invoice_requested>(invoices_actor, 1h);
    });
  auto& bus = h.start(b);
  bus::test::shutdown_anyway guard(h.system(), [&] { return bus.stopped(); });
  auto answer = [&](const caf::actor& a, std::string failure) {
    caf::anon_send(a, answer_atom::value, std::move(failure));
    h.run();
  };

  REQUIRE(bus.send("orders", order_placed{"o-1", 1}));
  h.run();
  answer(orders_actor, "cache down"); // the cache opens: orders pauses
  h.advance(5s);                      // half-open: o-1 is its probe, for the cache only
  REQUIRE(*orders_calls == 2);
  REQUIRE(bus.send("invoices", invoice_requested{"i-1", {}}));
  h.run();
  answer(invoices_actor, "db down"); // the database opens: both pause
  h.advance(5s);                     // half-open: i-1 is the database's probe
  REQUIRE(*invoices_calls == 2);
  REQUIRE(h.stats("invoices").probes == 1);
  REQUIRE(bus.send("orders", order_placed{"o-2", 1}));
  h.run();

  // Orders' probe fails for a reason of its own; o-2 comes next. The
  // database's probe is still out, on invoices: o-2 must wait.
  answer(orders_actor, "card declined");
  CHECK(h.stats("orders").dead_lettered == 1);
  CHECK(h.stats("orders").probes == 1);
  CHECK(*orders_calls == 2);

  answer(invoices_actor, ""); // the database is back: closed
  CHECK(h.stats("invoices").handled == 1);
  CHECK(*orders_calls == 3); // now o-2 probes the cache
  answer(orders_actor, "");
  CHECK(h.stats("orders").handled == 1);
  h.stop();
  CHECK(bus.stopped());
  caf::anon_send_exit(orders_actor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(invoices_actor, caf::exit_reason::user_shutdown);
}
