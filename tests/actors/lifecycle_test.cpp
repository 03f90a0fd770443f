// Starting, stopping and starting again: each ends in a state the user can
// rely on. A stop returns only once no handler of the bus runs any more,
// and what a handler that outlived its drain timeout does afterwards has
// no effect; a start that fails leaves nothing running and can be tried
// again; a stopped bus refuses sends instead of queueing them silently.
#include <catch2/catch.hpp>

#include <future>

#include "support/caf_fixture.hpp"
#include "support/eventually.hpp"
#include "support/forwarding_transport.hpp"
#include "support/handler_gate.hpp"
#include "support/real_threads_bus.hpp"
#include "support/shutdown_anyway.hpp"

using namespace bus::test;
using namespace std::chrono_literals;

namespace {

// Refuses to consume while `refuse` is set, as a broker that denies access
// to a queue would: every queue, or only the one named in `only`.
class consume_refusing_transport final : public forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;
  bool refuse = true;
  std::string only;
  std::string_view name() const noexcept override { return "consume-refusing"; }
  bus::result<void> consume(const std::string& q, std::size_t n,
                            bus::delivery_handler h) override {
    if (refuse && (only.empty() || q == only))
      return bus::error{bus::errc::transport_failure, "access to queue '" + q + "' refused by the broker"};
    return inner_.consume(q, n, std::move(h));
  }
};

} // namespace

TEST_CASE("stop with drain_timeout(0) gives a running message back at once and waits for its "
          "handler, whose sends are dropped") {
  real_threads_bus rt(2);
  auto gate = std::make_shared<handler_gate>();
  auto staged = std::make_shared<std::atomic<bool>>(false); // Catch2 asserts on this thread only
  REQUIRE(rt.transport->declare_queue("audit"));
  auto b = rt.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(1).drain_timeout(0s).handle<order_placed>(
      [gate, staged](const order_placed& m, bus::handler_context& ctx) {
        *staged = static_cast<bool>(ctx.send("audit", invoice_requested{m.order_id, {}}));
        gate->pass();
      });
  });
  auto bus = rt.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  REQUIRE(gate->wait_inside(1));
  CHECK(staged->load());

  auto stopping = std::async(std::launch::async, [&] { bus->stop(); });
  // Given back at once, while its handler still runs.
  REQUIRE(eventually([&] { return rt.transport->depth("billing") == 1; }, 10s));
  CHECK(gate->inside() == 1);
  CHECK(stopping.wait_for(0s) != std::future_status::ready);
  CHECK_FALSE(bus->stopped());

  gate->open();
  REQUIRE(stopping.wait_for(20s) == std::future_status::ready);
  CHECK(bus->stopped());
  CHECK(rt.transport->depth("audit") == 0); // the late handler's outbox went nowhere
  CHECK(rt.transport->depth("billing") == 1);
  CHECK(rt.transport->unacked("billing") == 0);
  auto s = *bus->stats("billing");
  CHECK(s.handled == 0);
  CHECK(s.requeued == 1);
  CHECK(s.in_flight == 0);
}

TEST_CASE("a handler sees that a stop was asked for") {
  real_threads_bus rt(2);
  auto gate = std::make_shared<handler_gate>();
  auto seen = std::make_shared<std::atomic<int>>(-1);
  auto b = rt.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([gate, seen](const order_placed&, bus::handler_context& ctx) {
      auto before = ctx.stop_requested();
      gate->pass();
      *seen = before ? 0 : (ctx.stop_requested() ? 1 : 2);
    });
  });
  auto bus = rt.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  REQUIRE(gate->wait_inside(1));
  bus->request_stop();
  gate->open();
  bus->stop();
  CHECK(seen->load() == 1); // not before the stop, and yes after it
}

TEST_CASE_METHOD(caf_fixture,
                 "a start the transport refuses leaves nothing running, names the cause, and can "
                 "be tried again") {
  auto refusing = std::make_shared<consume_refusing_transport>(*transport);
  int handled = 0;
  auto b = builder();
  b.transport(refusing).endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(3).handle<order_placed>([&](const order_placed&) { ++handled; });
  });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto running_before = sys.registry().running();

  auto started = bus.start();
  REQUIRE_FALSE(started);
  CHECK(started.error().message.find("access to queue 'billing' refused") != std::string::npos);
  sched.run();
  CHECK(sys.registry().running() == running_before); // no endpoint, consumer or scheduler left
  CHECK_FALSE(bus.running());

  refusing->refuse = false;
  REQUIRE(bus.start());
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(handled == 1);
  bus.request_stop();
  sched.run();
  CHECK(bus.stopped());
}

TEST_CASE_METHOD(caf_fixture,
                 "a start retried at once after a refusal runs one endpoint, which a stop ends") {
  auto refusing = std::make_shared<consume_refusing_transport>(*transport);
  int handled = 0;
  auto b = builder();
  b.transport(refusing).endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2).handle<order_placed>([&](const order_placed&) { ++handled; });
  });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto running_before = sys.registry().running();
  shutdown_anyway guard(sys, [&] {
    sched.run();
    return sys.registry().running() == running_before;
  });

  REQUIRE_FALSE(bus.start());
  refusing->refuse = false;
  REQUIRE(bus.start()); // before the failed start's actors have even run
  sched.run();          // they end now, after the retry launched its own
  CHECK(bus.running());
  CHECK_FALSE(bus.stopped());
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(handled == 1);

  bus.request_stop();
  sched.run();
  CHECK(bus.stopped());
  CHECK(sys.registry().running() == running_before);
  CHECK(transport->unacked("billing") == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a start that fails on one endpoint handles nothing on the others, and a retry "
                 "at once handles everything") {
  auto refusing = std::make_shared<consume_refusing_transport>(*transport);
  refusing->only = "shipping"; // launched after billing
  int billed = 0;
  int shipped = 0;
  auto b = builder();
  b.transport(refusing)
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&](const order_placed&) { ++billed; });
    })
    .endpoint("shipping", [&](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&](const order_placed&) { ++shipped; });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto running_before = sys.registry().running();
  shutdown_anyway guard(sys, [&] {
    sched.run();
    return sys.registry().running() == running_before;
  });
  // Waiting before the start: billing's consumer is handed them at once.
  for (const auto* queue : {"billing", "shipping"}) {
    REQUIRE(transport->declare_queue(queue));
    for (int i = 0; i < 3; ++i)
      REQUIRE(bus.send(queue, order_placed{"o-" + std::to_string(i), 1}));
  }

  auto started = bus.start();
  REQUIRE_FALSE(started);
  CHECK(started.error().message.find("endpoint 'shipping'") != std::string::npos);
  sched.run();
  CHECK(billed == 0);
  CHECK(shipped == 0);
  CHECK(sys.registry().running() == running_before);
  CHECK(transport->depth("billing") == 3);
  CHECK(transport->unacked("billing") == 0);
  CHECK(stats(bus, "billing").handled == 0);

  refusing->refuse = false;
  auto retried = bus.start();
  CHECK(retried);
  sched.run();
  CHECK(billed == 3);
  CHECK(shipped == 3);
  bus.request_stop();
  sched.run();
  CHECK(bus.stopped());
  CHECK(sys.registry().running() == running_before);
}

TEST_CASE_METHOD(caf_fixture,
                 "a start that fails on one endpoint can be retried at once, before its actors "
                 "ran") {
  auto refusing = std::make_shared<consume_refusing_transport>(*transport);
  refusing->only = "shipping";
  int handled = 0;
  auto b = builder();
  b.transport(refusing);
  for (const auto* name : {"billing", "shipping"})
    b.endpoint(name, [&](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&](const order_placed&) { ++handled; });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto running_before = sys.registry().running();
  shutdown_anyway guard(sys, [&] {
    sched.run();
    return sys.registry().running() == running_before;
  });

  REQUIRE_FALSE(bus.start());
  refusing->refuse = false;
  auto retried = bus.start();
  REQUIRE(retried);
  sched.run();
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  REQUIRE(bus.send("shipping", order_placed{"o-2", 1}));
  sched.run();
  CHECK(handled == 2);
  bus.request_stop();
  sched.run();
  CHECK(bus.stopped());
  CHECK(sys.registry().running() == running_before);
}

TEST_CASE_METHOD(caf_fixture, "a stopped bus starts again and handles messages") {
  int handled = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++handled; });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  bus->request_stop();
  sched.run();
  REQUIRE(bus->stopped());

  REQUIRE(bus->start());
  sched.run();
  CHECK(bus->running());
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  CHECK(handled == 2);
  CHECK(stats(*bus, "billing").handled == 2);
}

TEST_CASE_METHOD(caf_fixture, "send and publish on a stopped bus are refused as not running") {
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  bus->request_stop();
  sched.run();
  auto sent = bus->send("billing", order_placed{"o-1", 1});
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == bus::errc::not_running);
  auto published = bus->publish(order_placed{"o-2", 1});
  REQUIRE_FALSE(published);
  CHECK(published.error().code == bus::errc::not_running);
  CHECK(transport->depth("billing") == 0);
}

TEST_CASE_METHOD(caf_fixture, "one thread keeps many non-blocking sends in flight, each completed once") {
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  constexpr int sent = 1000;
  std::vector<int> completions(sent, 0);
  int failures = 0;
  for (int i = 0; i < sent; ++i)
    bus->send_async("billing", order_placed{"o-" + std::to_string(i), 1},
                    [&, i](bus::result<void> r) {
                      ++completions[i];
                      failures += r ? 0 : 1;
                    });
  CHECK(std::count(completions.begin(), completions.end(), 1) == sent);
  CHECK(failures == 0);
  sched.run();
  CHECK(stats(*bus, "billing").handled == sent);

  int published = 0;
  bus->publish_async(order_placed{"o-p", 1}, [&](bus::result<void> r) { published += r ? 1 : 0; });
  CHECK(published == 1);

  bus->request_stop();
  sched.run();
  std::optional<bus::errc> refused;
  bus->send_async("billing", order_placed{"o-late", 1}, [&](bus::result<void> r) {
    if (!r)
      refused = r.error().code;
  });
  CHECK(refused == bus::errc::not_running);
}
