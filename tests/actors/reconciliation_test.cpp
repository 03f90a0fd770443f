// The guarantees of the architecture page over many messages: every
// message ends in exactly one terminal outcome, nothing succeeds twice,
// and each endpoint's counters reconcile.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::order_placed;

namespace {

struct transient_failure : std::runtime_error {
  transient_failure() : std::runtime_error("transient") {}
};
struct fatal_failure : std::runtime_error {
  fatal_failure() : std::runtime_error("fatal") {}
};
struct benign_failure : std::runtime_error {
  benign_failure() : std::runtime_error("benign") {}
};

// What one message's handler does: fail `failures` times with `kind`
// (0 transient, 1 fatal, 2 benign), then succeed.
struct script {
  int failures = 0;
  int kind = 0;
};

// The policies endpoints draw from: every tier and terminal action.
std::vector<std::function<void(bus::policy_builder&)>> policy_pool() {
  return {
    [](bus::policy_builder& p) { p.on_any().retry(2, 10ms).then_redeliver({1s, 5s}); },
    [](bus::policy_builder& p) { p.on_any().redeliver({2s}); },
    [](bus::policy_builder& p) { p.on_any().retry({0ms}).then_dead_letter(); },
    [](bus::policy_builder& p) {
      p.on<transient_failure>().retry(3).then_redeliver(2, 1s);
      p.on<fatal_failure>().dead_letter();
      p.on<benign_failure>().discard();
    },
    [](bus::policy_builder& p) { p.on_any().max_attempts(4).retry(2).then_redeliver(3, 1min); },
  };
}

} // namespace

TEST_CASE("over 10000 messages with random failures and policies every message ends exactly once") {
  constexpr int message_count = 10'000;
  constexpr int endpoint_count = 5;
  std::mt19937 random(2026);
  bus::testing::harness h;

  std::map<std::string, script> scripts;     // by order id
  std::map<std::string, int> attempts;       // by order id
  std::set<std::string> succeeded;           // order ids handled successfully
  int handled_after_success = 0;

  auto pool = policy_pool();
  auto b = h.builder();
  b.message<order_placed>("order_placed");
  for (int i = 0; i < endpoint_count; ++i) {
    auto slots = 1 + random() % 8;
    auto& policy = pool[i % pool.size()];
    b.endpoint("endpoint-" + std::to_string(i), [&, slots](bus::endpoint_builder& e) {
      e.slots(slots).add_resilience(policy).handle<order_placed>([&](const order_placed& m) {
        if (succeeded.count(m.order_id))
          ++handled_after_success;
        const auto& s = scripts.at(m.order_id);
        if (attempts[m.order_id]++ < s.failures) {
          switch (s.kind) {
            case 0: throw transient_failure();
            case 1: throw fatal_failure();
            default: throw benign_failure();
          }
        }
        succeeded.insert(m.order_id);
      });
    });
  }
  auto& bus = h.start(b);

  for (int i = 0; i < message_count; ++i) {
    auto id = "o-" + std::to_string(i);
    // Most messages fail a few times; a few never recover.
    scripts[id] = script{static_cast<int>(random() % 4 == 0 ? random() % 12 : random() % 3),
                         static_cast<int>(random() % 3)};
    REQUIRE(bus.send("endpoint-" + std::to_string(random() % endpoint_count), order_placed{id, 1}));
    if (i % 500 == 0)
      h.advance(100ms); // interleave arrivals with retries in flight
  }
  h.advance_until_idle();

  // Every message id ends in exactly one terminal outcome.
  std::map<std::string, int> terminal;
  for (const auto& e : h.events())
    if (e.kind == event_kind::handled || e.kind == event_kind::dead_lettered
        || e.kind == event_kind::discarded)
      ++terminal[e.message_id];
  CHECK(terminal.size() == static_cast<std::size_t>(message_count));
  int more_than_once = 0;
  for (const auto& [id, n] : terminal)
    more_than_once += n != 1;
  CHECK(more_than_once == 0);
  CHECK(handled_after_success == 0);

  // Each endpoint's counters reconcile, and nothing is left in flight.
  std::uint64_t handled = 0, ended_badly = 0, dead = 0, discarded = 0, redelivered = 0;
  for (int i = 0; i < endpoint_count; ++i) {
    auto name = "endpoint-" + std::to_string(i);
    INFO(name);
    auto s = h.stats(name);
    CHECK(s.received
          == s.handled + s.dead_lettered + s.discarded + s.skipped + s.requeued
               + s.redeliveries_scheduled + static_cast<std::uint64_t>(s.in_flight));
    CHECK(s.in_flight == 0);
    CHECK(s.pending_redelivery == 0);
    CHECK(h.error_queue(name).size() == s.dead_lettered);
    CHECK(h.queue(name).empty());
    handled += s.handled;
    ended_badly += s.dead_lettered + s.discarded;
    dead += s.dead_lettered;
    discarded += s.discarded;
    redelivered += s.redeliveries_scheduled;
  }
  // The run took every path, so the invariants above were tested on each.
  CHECK(dead > 0);
  CHECK(discarded > 0);
  CHECK(redelivered > 0);
  CHECK(handled == succeeded.size());
  CHECK(handled + ended_badly == static_cast<std::uint64_t>(message_count));
}
