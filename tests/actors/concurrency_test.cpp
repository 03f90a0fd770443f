// An endpoint with N slots runs at most N handlers at once, and does reach N.
#include <catch2/catch.hpp>

#include <spdlog/sinks/null_sink.h>

#include "bus/actor_handler.hpp"
#include "support/caf_fixture.hpp"
#include "support/concurrency_probe.hpp"
#include "support/forwarding_transport.hpp"
#include "support/holding_actor.hpp"

using namespace bus::test;

namespace {

// Ten messages sent to "billing", 3 slots, whose handler actor holds each
// one unanswered until released: what it holds is exactly what runs at
// once. On `transport`, or the fixture's in-memory one when null.
struct held_billing {
  std::shared_ptr<holding_counts> counts = std::make_shared<holding_counts>();
  caf::actor worker;
  std::unique_ptr<bus::message_bus> bus;

  held_billing(caf_fixture& f, bus::transport_ptr transport = nullptr)
      : worker(spawn_holding_actor<order_placed>(f.sys, counts)) {
    auto b = f.builder();
    if (transport)
      b.transport(std::move(transport));
    b.endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(3).handle_with_actor<order_placed>(worker, std::chrono::hours(1));
    });
    bus = f.start(b);
    for (int i = 0; i < 10; ++i)
      REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
    f.sched.run();
  }

  ~held_billing() { caf::anon_send_exit(worker, caf::exit_reason::user_shutdown); }
};

} // namespace

TEST_CASE_METHOD(caf_fixture, "with N slots exactly N messages are in their handler while more wait") {
  held_billing held(*this);
  auto& [counts, worker, bus] = held;
  CHECK(counts->holding() == 3);
  // In memory the endpoint holds one delivery more per slot, waiting.
  CHECK(transport->depth("billing") == 4);

  std::size_t most_at_once = counts->holding();
  while (counts->answered < 10) {
    caf::anon_send(worker, release_atom::value);
    sched.run();
    most_at_once = std::max(most_at_once, counts->holding());
    CHECK(counts->holding() <= 3);
  }
  CHECK(counts->received == 10);
  CHECK(most_at_once == 3);
  CHECK(stats(*bus, "billing").handled == 10);
}

TEST_CASE("on real threads an endpoint with 4 slots runs 4 handlers at once and never 5") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 8); // more threads than slots: only the slots may limit
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  auto probe = std::make_shared<concurrency_probe>(4);
  bus::bus_builder b{sys};
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>("order_placed")
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(4).handle<order_placed>([probe](const order_placed&) { probe->enter_and_leave(); });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  for (int i = 0; i < 40; ++i)
    REQUIRE((*bus)->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  CHECK(probe->wait_completed(40));
  (*bus)->stop();
  CHECK(probe->most() == 4);
  CHECK((*bus)->stats("billing")->handled == 40);
}

namespace {

// The in-memory transport, saying its messages outlive the process as a
// broker's do.
class durable_transport final : public forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;
  bus::transport_capabilities capabilities() const noexcept override {
    auto c = inner_.capabilities();
    c.durable = true;
    return c;
  }
};

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "on a durable transport an endpoint takes one delivery per slot and no more") {
  // A delivery taken ahead would go back to a broker's queue when the
  // process dies, and count there as a delivery of its message.
  held_billing held(*this, std::make_shared<durable_transport>(*transport));
  auto& [counts, worker, bus] = held;
  CHECK(counts->holding() == 3);
  CHECK(transport->depth("billing") == 7);
  CHECK(stats(*bus, "billing").in_flight == 3);
  while (counts->answered < 10) {
    caf::anon_send(worker, release_atom::value);
    sched.run();
  }
  CHECK(stats(*bus, "billing").handled == 10);
}

TEST_CASE_METHOD(caf_fixture, "one slot runs its messages in the order they were sent, however "
                              "many wait in the endpoint") {
  // While the first message waits for its retry, holding the slot, the
  // next is offered ahead and more wait behind it in the endpoint. The
  // consumer that ends the retry reports itself idle: it must be handed
  // the offered message, the oldest, not the first one waiting.
  std::vector<std::string> order;
  bool failed_once = false;
  auto b = builder();
  b.add_resilience([](bus::policy_builder& p) {
     p.on_any().retry(1, std::chrono::milliseconds(100)).jitter(false);
   }).endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(1).handle<order_placed>([&](const order_placed& m) {
      if (!failed_once) {
        failed_once = true;
        throw std::runtime_error("the first attempt fails");
      }
      order.push_back(m.order_id);
    });
  });
  auto bus = start(b);
  std::vector<std::string> sent;
  for (int i = 0; i < 5; ++i) {
    sent.push_back("o-" + std::to_string(i));
    REQUIRE(bus->send("billing", order_placed{sent.back(), 1}));
  }
  sched.run();
  CHECK(order.empty()); // o-0 waits for its retry
  sched.advance_time(std::chrono::milliseconds(100));
  sched.run();
  CHECK(order == sent);
}
