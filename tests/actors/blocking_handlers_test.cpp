// Slots are concurrency: an endpoint with n slots runs n handlers at once
// whatever CAF's thread count, and handlers that block (a database call)
// never hold the workers that the user's own actors need.
#include <catch2/catch.hpp>

#include "support/concurrency_probe.hpp"
#include "support/handler_gate.hpp"
#include "support/real_threads_bus.hpp"

using namespace bus::test;

namespace {

using echo_atom = caf::atom_constant<caf::atom("echo")>;

caf::behavior echo_actor(caf::event_based_actor*) {
  return {[](echo_atom, int x) { return x; }};
}

} // namespace

TEST_CASE("with CAF at 2 threads an endpoint with 8 slots runs 8 blocking handlers at once") {
  real_threads_bus rt(2);
  auto probe = std::make_shared<concurrency_probe>(8);
  auto b = rt.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(8).handle<order_placed>([probe](const order_placed&) { probe->enter_and_leave(); });
  });
  auto bus = rt.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 16; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  CHECK(probe->wait_completed(16));
  bus->stop();
  CHECK(probe->most() == 8);
  CHECK(bus->stats("billing")->handled == 16);
}

TEST_CASE("a user's actor answers a request while every slot's handler blocks") {
  real_threads_bus rt(2);
  auto gate = std::make_shared<handler_gate>();
  auto b = rt.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(8).handle<order_placed>([gate](const order_placed&) { gate->pass(); });
  });
  auto bus = rt.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 8; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  REQUIRE(gate->wait_inside(8));

  auto echo = rt.sys.spawn(echo_actor);
  bool answered = false;
  {
    caf::scoped_actor self{rt.sys};
    self->request(echo, std::chrono::seconds(5), echo_atom::value, 7)
      .receive([&](int x) { answered = x == 7; }, [&](caf::error&) {});
  }
  CHECK(answered);
  gate->open();
  CHECK(gate->wait_passed(8));
  bus->stop();
  CHECK(bus->stats("billing")->handled == 8);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

TEST_CASE("an endpoint whose handlers never block can run them on CAF's workers, by choice") {
  real_threads_bus rt(2);
  auto probe = std::make_shared<concurrency_probe>(2);
  auto b = rt.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(4)
      .handler_threads(bus::handler_threads::caf_workers)
      .handle<order_placed>([probe](const order_placed&) { probe->enter_and_leave(); });
  });
  auto bus = rt.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 40; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  CHECK(probe->wait_completed(40));
  bus->stop();
  // Inline on CAF's two workers: never more at once than there are workers.
  CHECK(probe->most() <= 2);
  CHECK(bus->stats("billing")->handled == 40);
}
