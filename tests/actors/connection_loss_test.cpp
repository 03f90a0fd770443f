// After the connection a delivery came over is lost, the broker delivers
// its message again. The copy the bus still holds must then neither run
// nor end: not started, it is dropped; already running, its outcome is
// dropped, so that no redelivery copy or error-queue copy gives it a
// second life beside the broker's new delivery.
#include <catch2/catch.hpp>

#include "support/caf_fixture.hpp"
#include "support/forwarding_transport.hpp"

using namespace bus::test;
using namespace std::chrono_literals;

namespace {

// Loses its connection on demand: from then on, no delivery made so far
// can be settled, as on a broker whose channel closed.
class losing_transport final : public forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;
  bool lost = false;
  int settled = 0;
  std::string_view name() const noexcept override { return "losing"; }
  bool settleable(std::uint64_t) const override { return !lost; }
  bus::result<void> ack(std::uint64_t tag) override {
    ++settled;
    return inner_.ack(tag);
  }
  bus::result<void> reject(std::uint64_t tag, bool requeue) override {
    ++settled;
    return inner_.reject(tag, requeue);
  }
};

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "deliveries of a lost connection that have not started are dropped, not run") {
  auto losing = std::make_shared<losing_transport>(*transport);
  int runs = 0;
  auto b = builder();
  b.transport(losing).endpoint("billing", [&](bus::endpoint_builder& e) {
    // Two slots: both are delivered at once; the second waits in its
    // consumer's mailbox while the first runs.
    e.slots(2).handle<order_placed>([&](const order_placed&) {
      ++runs;
      losing->lost = true; // the connection dies while the first one runs
    });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  CHECK(runs == 1); // the second never ran
  CHECK(losing->settled == 0);
  auto s = stats(*bus, "billing");
  CHECK(s.handled == 0);
  CHECK(s.requeued == 2);
  CHECK(s.in_flight == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a delivery whose connection was lost while its handler ran does not start a "
                 "second life through a redelivery copy") {
  auto losing = std::make_shared<losing_transport>(*transport);
  auto b = builder();
  b.transport(losing)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        losing->lost = true;
        throw std::runtime_error("database connection reset");
      });
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  auto s = stats(*bus, "billing");
  CHECK(s.failed_attempts == 1);
  CHECK(s.redeliveries_scheduled == 0);
  CHECK(s.pending_redelivery == 0);
  CHECK(s.dead_lettered == 0);
  CHECK(s.requeued == 1);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing_error") == 0);
  CHECK(losing->settled == 0);
  sched.advance_time(2min);
  sched.run();
  CHECK(transport->depth("billing") == 0); // no copy came back either
}

TEST_CASE_METHOD(caf_fixture,
                 "a delivery whose connection was lost while it waited for an immediate retry is "
                 "not attempted again, and counts once as requeued") {
  auto losing = std::make_shared<losing_transport>(*transport);
  int runs = 0;
  auto b = builder();
  b.transport(losing)
    .add_resilience([](bus::policy_builder& p) { p.on_any().retry(3, 1s).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        if (++runs == 1)
          throw std::runtime_error("deadlock victim");
      });
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  REQUIRE(runs == 1);
  REQUIRE(stats(*bus, "billing").immediate_retries == 1);
  losing->lost = true; // the broker stops while the retry waits
  sched.advance_time(1s);
  sched.run();
  CHECK(runs == 1); // the retry would succeed, on a delivery nobody can settle
  auto s = stats(*bus, "billing");
  CHECK(s.handled == 0);
  CHECK(s.requeued == 1);
  CHECK(s.in_flight == 0);
  CHECK(losing->settled == 0);
}
