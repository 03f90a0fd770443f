// Deliveries offered ahead (actors/src/ready_line.hpp): on threads of its
// own, a consumer that ends its delivery goes on to the next one itself,
// from a line the endpoint fills while every slot is busy. On the test
// coordinator a consumer never lingers, so every offer there is withdrawn
// for the consumer that went idle: the order of work is the endpoint's,
// as without offers; on real threads short handlers take offers all the
// time. What must hold either way: a slow slot holds nothing back, no
// delivery runs twice or not at all, and never more than the slots at
// once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/null_sink.h>

#include "bus/actor_handler.hpp"
#include "support/caf_fixture.hpp"
#include "support/eventually.hpp"
#include "support/holding_actor.hpp"

using namespace bus::test;
using namespace std::chrono_literals;

namespace {

// Answers every order at once but those whose id starts with "slow", which
// it holds until released (release_atom, the oldest first).
caf::actor spawn_slow_for_some(caf::actor_system& sys, std::shared_ptr<holding_counts> counts) {
  return sys.spawn([counts](caf::event_based_actor* self) -> caf::behavior {
    auto held = std::make_shared<std::vector<caf::response_promise>>();
    return {
      [=](bus::handle_atom, const order_placed& o) -> caf::result<void> {
        ++counts->received;
        if (o.order_id.rfind("slow", 0) != 0) {
          ++counts->answered;
          return caf::unit;
        }
        held->push_back(self->make_response_promise());
        return caf::delegated<void>{};
      },
      [=](release_atom) {
        for (auto& p : *held)
          if (p.pending()) {
            ++counts->answered;
            p.deliver(caf::unit);
            return;
          }
      },
    };
  });
}

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "deliveries offered ahead go to the slot that is free, never behind a slot stuck "
                 "in a slow handler") {
  auto counts = std::make_shared<holding_counts>();
  auto worker = spawn_slow_for_some(sys, counts);
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2).handle_with_actor<order_placed>(worker, std::chrono::hours(1));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"slow-1", 1}));
  for (int i = 1; i <= 6; ++i)
    REQUIRE(bus->send("billing", order_placed{"fast-" + std::to_string(i), 1}));
  sched.run();
  CHECK(counts->holding() == 1);
  CHECK(stats(*bus, "billing").handled == 6);

  caf::anon_send(worker, release_atom::value);
  sched.run();
  CHECK(stats(*bus, "billing").handled == 7);
  CHECK(transport->unacked("billing") == 0);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("on real threads short handlers that go on to offered deliveries handle each message "
          "once and never run more than their slots at once") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2); // CI's cores: the endpoint competes with its consumers
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  constexpr int messages = 20'000;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::mutex seen_mutex;
  std::vector<int> seen(messages, 0);
  bus::bus_builder b{sys};
  b.transport(transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<order_placed>("order_placed")
      .endpoint("billing", [&](bus::endpoint_builder& e) {
        e.slots(4).handle<order_placed>([&](const order_placed& o) {
          auto now = ++running;
          auto before = most.load();
          while (now > before && !most.compare_exchange_weak(before, now)) {
          }
          {
            std::lock_guard<std::mutex> guard(seen_mutex);
            ++seen[static_cast<std::size_t>(o.amount)];
          }
          --running;
        });
      });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  for (int i = 0; i < messages; ++i)
    REQUIRE(
        (*bus)->send("billing", order_placed{"o-" + std::to_string(i), static_cast<double>(i)}));
  CHECK(eventually([&] { return (*bus)->stats("billing")->handled == messages; },
                   std::chrono::seconds(60)));
  (*bus)->stop();
  CHECK(most.load() <= 4);
  std::lock_guard<std::mutex> guard(seen_mutex);
  CHECK(std::count(seen.begin(), seen.end(), 1) == messages);
  CHECK((*bus)->stats("billing")->handled == messages);
  CHECK(transport->unacked("billing") == 0);
}
