// A broker restart in the middle of a run: a producer keeps sending, each
// send confirmed, while a bus endpoint consumes, and the node is stopped
// and started again on its data. Every confirmed message is handled, the
// messages in flight at the restart come again instead of being
// acknowledged on a connection that no longer exists, the redeliveries the
// broker held in its delay levels come out, and both transports reconnect
// by themselves.
//
// The test restarts the node, so it runs on a node of its own (the ctest
// fixture rabbitmq_restart), never on the one the other RabbitMQ tests share.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "fault_run.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;

namespace {

struct restart_probe {
  std::string id;
  bool fails_first = false; // fails its first delivery: redelivered through the delay levels
  bool held = false;        // its first attempt waits until the broker is back
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(restart_probe, id, fails_first, held)

constexpr std::size_t consumer_slots = 4;

// Settings for a run that survives a restart: sends and declarations wait
// for the node to come back (it takes 10 s, and much longer on a loaded
// machine) rather than fail, and reconnects are tried at least every
// second so the test does not wait out a long backoff.
bus::rabbitmq_settings restart_settings(const std::string& name, bus::test::log_capture& log) {
  auto s = bus::test::test_settings();
  s.operation_timeout = 120s;
  s.reconnect_delay_min = 100ms;
  s.reconnect_delay_max = 1s;
  s.connection_name = name;
  s.log = log.sink();
  return s;
}

} // namespace

TEST_CASE("a broker restart during a run loses no confirmed message, and the messages in flight "
          "at the restart are handled again",
          "[rabbitmq][bus][restart]") {
  auto endpoint = bus::test::unique_name("restart.billing");
  auto type = bus::test::unique_name("restart_probe");
  bus::test::log_capture consumer_log, producer_log;
  auto consumer_transport =
      bus::test::connect_transport(restart_settings("restart consumer", consumer_log));
  auto producer_transport =
      bus::test::connect_transport(restart_settings("restart producer", producer_log));
  bus::test::handler_record record;
  std::optional<bus::endpoint_stats> stats;
  std::vector<restart_probe> confirmed;
  std::vector<std::string> refused;
  std::set<std::string> awaiting_at_restart;
  {
    caf::actor_system_config cfg;
    // Two handlers block their threads while the broker is down, and the
    // scheduler blocks in send_delayed until it is back: enough threads
    // that the rest keeps going.
    cfg.set("scheduler.max-threads", 4);
    caf::actor_system sys{cfg};
    auto quiet = std::vector<std::shared_ptr<spdlog::sinks::sink>>{
        std::make_shared<spdlog::sinks::null_sink_mt>()};

    bus::bus_builder consuming{sys};
    consuming.name("restart-consumer")
        .transport(consumer_transport)
        .log_sinks(quiet)
        .message<restart_probe>(type)
        .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1s}).jitter(false); })
        .endpoint(endpoint, [&](bus::endpoint_builder& e) {
          e.slots(consumer_slots)
              .handle<restart_probe>([&](const restart_probe& m, bus::handler_context& ctx) {
                if (m.held)
                  record.hold(m.id);
                if (m.fails_first && ctx.delivery_count() == 0) {
                  record.failed(m.id, ctx.delivery_count(), ctx.attempt());
                  throw std::runtime_error("fails on its first delivery");
                }
                record.handled(m.id);
              });
        });
    auto consumer_bus = consuming.build();
    REQUIRE(consumer_bus);
    REQUIRE((*consumer_bus)->start());

    bus::bus_builder producing{sys};
    producing.name("restart-producer")
        .transport(producer_transport)
        .log_sinks(quiet)
        .message<restart_probe>(type);
    auto producer_bus = producing.build();
    REQUIRE(producer_bus);
    REQUIRE((*producer_bus)->start());

    // Two messages in the middle of their handler when the broker goes down.
    REQUIRE((*producer_bus)->send(endpoint, restart_probe{"held-0", false, true}));
    REQUIRE((*producer_bus)->send(endpoint, restart_probe{"held-1", false, true}));
    REQUIRE(record.wait_until_holding(2));

    bus::test::probe_producer<restart_probe> sender(**producer_bus, endpoint, [](int i) {
      return restart_probe{"m-" + std::to_string(i), i % 10 == 3, false};
    });
    REQUIRE(record.wait_for_total(100, 30s)); // messages flow, redeliveries wait in the levels
    awaiting_at_restart = record.awaiting_redelivery();
    auto restart = bus::test::broker_env("BUS_RABBITMQ_RESTART") + " >/dev/null 2>&1";
    REQUIRE(std::system(restart.c_str()) == 0);
    auto sent_before_back = sender.confirmed_count();

    // Both transports come back by themselves: each has two connections.
    CHECK(bus::test::eventually(
        [&] {
          return consumer_transport->reconnects() >= 2 && producer_transport->reconnects() >= 2;
        },
        60s));
    record.release();
    REQUIRE(bus::test::eventually(
        [&] { return sender.confirmed_count() >= sent_before_back + 100; }, 60s));
    sender.stop();
    confirmed = sender.confirmed();
    refused = sender.refused();

    // Every confirmed message handled, and the held ones twice: their first
    // attempt ended after the connection it came over was gone, so its
    // acknowledgement could not be sent, and the broker delivered them again.
    bool all_handled = bus::test::eventually(
        [&] {
          auto handled = record.handled();
          return std::all_of(confirmed.begin(), confirmed.end(),
                             [&](const restart_probe& p) { return handled.count(p.id) > 0; })
                 && handled["held-0"] >= 2 && handled["held-1"] >= 2;
        },
        60s, 50ms);
    (*consumer_bus)->stop();
    (*producer_bus)->stop();
    stats = (*consumer_bus)->stats(endpoint);
    CHECK(all_handled);
  }

  auto handled = record.handled();
  INFO(confirmed.size() << " messages confirmed, " << refused.size() << " refused"
                        << (refused.empty() ? "" : " (first: " + refused.front() + ")") << "; "
                        << handled.size() << " handled; " << awaiting_at_restart.size()
                        << " awaiting their redelivery at the restart");
  // Sends waited for the node to come back instead of failing.
  CHECK(refused.empty());
  // Nothing confirmed was lost, including what the delay levels held.
  std::vector<std::string> lost;
  for (const auto& p : confirmed)
    if (handled.count(p.id) == 0)
      lost.push_back(p.id);
  CHECK(lost.empty());
  CHECK_FALSE(awaiting_at_restart.empty());
  for (const auto& id : awaiting_at_restart) {
    INFO(id << " waited for its redelivery at the restart");
    CHECK(handled.count(id) > 0);
  }
  CHECK(handled["held-0"] >= 2);
  CHECK(handled["held-1"] >= 2);
  // At least once, bounded: a message is handled twice only if its
  // delivery was unacknowledged at the restart (at most the prefetch,
  // `consumer_slots`), if the producer's one send in flight lost its confirm and
  // was published again, or if the scheduling of a failed message's
  // redelivery (one send_delayed per slot at most) lost its confirm and was
  // published into the delay levels again (seen: m-733 and m-743, both
  // failing first, handled twice besides two unacknowledged at the restart).
  std::vector<std::string> twice;
  std::ostringstream counts;
  for (const auto& [id, n] : handled)
    if (n > 1) {
      twice.push_back(id);
      counts << ' ' << id << " (" << n << " times)";
    }
  INFO(twice.size() << " handled more than once:" << counts.str());
  CHECK(twice.size() <= 2 * consumer_slots + 1);

  // The endpoint's counters reconcile, with nothing left in flight.
  REQUIRE(stats.has_value());
  CHECK(stats->dead_lettered == 0);
  bus::test::check_counters_reconcile(*stats, handled);

  // The transports saw the restart and came back, and no acknowledgement
  // of the lost connection went out on the new one, where its delivery tag
  // would name another message (RabbitMQ closes the channel for an
  // unknown tag).
  CHECK(bus::test::mentions(consumer_log.lines(), "is back"));
  CHECK(bus::test::mentions(producer_log.lines(), "is back"));
  CHECK_FALSE(bus::test::mentions(consumer_log.lines(), "unknown delivery tag"));

  // The broker holds nothing more for the endpoint: its queue and the
  // delay levels are empty (the consumer is gone, so nothing is unacked).
  consumer_transport.reset();
  producer_transport.reset();
  auto reader = bus::test::connect_transport();
  CHECK(reader->message_count(endpoint).value() == 0);
  bus::test::check_delay_levels_drained();
}
