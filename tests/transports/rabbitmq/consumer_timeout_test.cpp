// Deliveries an open dependency breaker holds stay unacknowledged; past the
// broker's consumer_timeout (30 min by default) RabbitMQ closes their
// channel and delivers them again. The held ones went stale with it: they
// end unsettled, counted as requeued, and each message is handled once,
// from its new delivery. The broker's timeout is shortened for channels
// opened during the test; it runs on the node no other test shares at
// that moment (the restart fixture's, under its lock).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "support/eventually.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

struct db_error : std::runtime_error {
  db_error() : std::runtime_error("inventory-db unavailable") {}
};

// A channel reads the broker's consumer_timeout when it opens, and the
// interval of the tick that checks it each time it re-arms the tick: both
// shortened for the whole test, then put back to RabbitMQ's defaults.
class short_consumer_timeout {
public:
  short_consumer_timeout() {
    REQUIRE(set(2000, 500) == 0);
  }
  ~short_consumer_timeout() { (void)set(1800000, 60000); }

  // What the broker's application environment says of both now, for a
  // failure's message: {ok,2000} {ok,500} while the test runs.
  static std::string now_set() {
    return bus::test::run_broker_tool("BUS_RABBITMQ_CTL",
                                      "eval '{application:get_env(rabbit, consumer_timeout), "
                                      "application:get_env(rabbit, channel_tick_interval)}.'")
      .text;
  }

private:
  static int set(int timeout_ms, int tick_ms) {
    return bus::test::rabbitmqctl("eval 'application:set_env(rabbit, consumer_timeout, "
                                  + std::to_string(timeout_ms)
                                  + "), application:set_env(rabbit, channel_tick_interval, "
                                  + std::to_string(tick_ms) + ").'");
  }
};

} // namespace

TEST_CASE("deliveries held by an open breaker past the broker's consumer timeout come back and "
          "are handled once",
          "[consumer_timeout]") {
  constexpr int messages = 6;
  short_consumer_timeout timeout; // before the bus: its channels open with it
  auto endpoint = bus::test::unique_name("stock_timeout");
  std::mutex mutex;
  std::map<std::string, int> handled; // order id -> times handled
  // The inventory is down until its breaker has opened: every attempt
  // fails until then. Failing a fixed number of attempts instead let the
  // breaker stay closed when a held message's next attempt succeeded
  // before the other slot's failure was counted (fail, success, fail is
  // never two consecutive failures); nothing was held then, and the
  // broker had nothing to time out.
  std::atomic<bool> inventory_down{true};
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::dependency_breaker_settings db;
  db.consecutive_failures = 2;
  db.failure_rate = 0;
  db.open_wait = 6s; // three of the broker's timeouts, then a probe that succeeds
  bus::test::log_capture log;
  auto settings = bus::test::test_settings();
  settings.log = log.sink();
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe([&](const bus::bus_event& e) {
      if (e.kind == bus::event_kind::held_back
          && e.detail.find("'inventory-db' is down") != std::string::npos)
        inventory_down = false; // the probe, 6 s later, succeeds
    })
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .dependency("inventory-db", db)
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.slots(2)
        .add_resilience([](bus::policy_builder& p) { p.on<db_error>().trips("inventory-db"); })
        .handle<order_placed>([&](const order_placed& m) {
          if (inventory_down)
            throw db_error();
          std::lock_guard<std::mutex> guard(mutex);
          ++handled[m.order_id];
        });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus.send(endpoint, order_placed{"o-" + std::to_string(i), 1}));

  // The handler's own record comes before the bus counts the message
  // handled (that follows its settlement): wait for both.
  auto all_handled = [&] {
    std::lock_guard<std::mutex> guard(mutex);
    return handled.size() == static_cast<std::size_t>(messages)
           && bus.stats(endpoint)->handled == static_cast<std::uint64_t>(messages);
  };
  REQUIRE(bus::test::eventually(all_handled, 60s));
  {
    std::lock_guard<std::mutex> guard(mutex);
    for (const auto& [id, times] : handled)
      CHECK(times == 1);
  }
  auto s = *bus.stats(endpoint);
  // Should the broker not have closed the channel, the failure says what
  // the broker's settings were then, and what the transport saw.
  auto lines = log.lines();
  std::string transport_log;
  for (const auto& line : lines)
    transport_log += line + "\n";
  INFO("the broker's settings now: " << short_consumer_timeout::now_set() << "the bus: handled "
                                     << s.handled << ", requeued " << s.requeued << ", held back "
                                     << s.held_back << "; the transport's log:\n"
                                     << transport_log);
  CHECK(s.handled == static_cast<std::uint64_t>(messages));
  CHECK(s.dead_lettered == 0);
  // The held deliveries went stale when the broker closed their channel:
  // each ended unsettled, counted as requeued, and came again.
  CHECK(s.requeued >= 1);
  // And that is what happened: the broker closed the channel for it.
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("delivery acknowledgement on channel") != std::string::npos;
  }));
  CHECK(bus::test::eventually([&] { return bus::test::queue_depths()[endpoint] == 0; }, 20s));
  CHECK(bus::test::queue_depths()[endpoint + "_error"] == 0);
  bus.stop();
}
