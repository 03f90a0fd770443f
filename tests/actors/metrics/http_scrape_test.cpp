// A run with failures (an immediate retry that helps, retries and a
// redelivery that do not, the error queue at the end, a message that had
// expired before it arrived), scraped over real
// HTTP with curl: every counter of the scrape equals bus.stats(), the
// histograms counted every attempt, and readiness follows the bus.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>

#include "scrape.hpp"
#include "support/eventually.hpp"
#include "support/real_threads_bus.hpp"

using namespace std::chrono_literals;

namespace {

// Each sample of the endpoint, with the bus.stats() value it must equal.
std::vector<std::pair<std::string, std::uint64_t>> expected_counters(const bus::endpoint_stats& s) {
  return {{"messaging_client_consumed_messages_total", s.received},
          {"bus_messages_handled_total", s.handled},
          {"bus_failed_attempts_total", s.failed_attempts},
          {"bus_immediate_retries_total", s.immediate_retries},
          {"bus_redeliveries_scheduled_total", s.redeliveries_scheduled},
          {"bus_messages_dead_lettered_total", s.dead_lettered},
          {"bus_messages_discarded_total", s.discarded},
          {"bus_messages_skipped_total", s.skipped},
          {"bus_messages_requeued_total", s.requeued},
          {"bus_retries_denied_total", s.retries_denied},
          {"bus_messages_expired_total", s.expired},
          {"bus_dependency_pauses_total", s.dependency_pauses},
          {"bus_messages_held_back_total", s.held_back},
          {"bus_inbox_duplicates_total", s.duplicates},
          {"bus_inbox_cleanups_total", s.inbox_cleanups},
          {"bus_inbox_records_cleaned_total", s.inbox_records_cleaned},
          {"bus_dependency_probes_total", s.probes},
          {"bus_dependency_paused", s.dependency_paused ? 1u : 0u},
          {"bus_messages_in_flight", static_cast<std::uint64_t>(s.in_flight)},
          {"bus_redeliveries_pending", static_cast<std::uint64_t>(s.pending_redelivery)}};
}

} // namespace

TEST_CASE("a run with failures scraped with curl reconciles with bus.stats(), and readiness "
          "follows the bus",
          "[metrics][http]") {
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics("127.0.0.1:0");
  std::mutex mutex;
  std::map<std::string, int> attempts;
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2)
      .add_resilience([](bus::policy_builder& p) { p.on_any().retry(1, 0ms).then_redeliver(1, 10ms); })
      .handle<bus::test::order_placed>([&](const bus::test::order_placed& m) {
        int n;
        {
          std::lock_guard<std::mutex> guard(mutex);
          n = ++attempts[m.order_id];
        }
        if (m.order_id == "doomed" || (m.order_id == "flaky" && n == 1))
          throw std::runtime_error("card declined");
      });
  });
  auto bus = rig.build(b);
  auto address = bus->metrics_address();
  REQUIRE(address.rfind("127.0.0.1:", 0) == 0);
  REQUIRE(address != "127.0.0.1:0");

  CHECK(bus::test::http_get(address, "/health/live").status == 200);
  auto before = bus::test::http_get(address, "/health/ready");
  CHECK(before.status == 503);
  CHECK(before.body.find("the bus is not running") != std::string::npos);

  REQUIRE(bus->start());
  auto ready = bus::test::http_get(address, "/health/ready");
  CHECK(ready.status == 200);
  CHECK(ready.body == "ready\n");

  for (const char* id : {"ok-1", "ok-2", "flaky", "doomed"})
    REQUIRE(bus->send("billing", bus::test::order_placed{id, 10.0}));
  // Expired before it arrives: never handled, discarded (the default).
  bus::send_options stale;
  stale.expires_at = std::chrono::system_clock::now() - 1s;
  REQUIRE(bus->send("billing", bus::test::order_placed{"stale", 10.0}, stale));
  REQUIRE(bus::test::eventually(
    [&] {
      auto s = *bus->stats("billing");
      return s.handled == 3 && s.dead_lettered == 1 && s.expired == 1 && s.in_flight == 0
             && s.pending_redelivery == 0;
    },
    10s));

  auto s = *bus->stats("billing");
  // The run as planned: flaky retried once; doomed retried, redelivered,
  // retried again, then dead-lettered.
  CHECK(s.received == 6);
  CHECK(s.expired == 1);
  CHECK(s.discarded == 1);
  CHECK(s.failed_attempts == 5);
  CHECK(s.immediate_retries == 3);
  CHECK(s.redeliveries_scheduled == 1);

  auto scrape = bus::test::http_get(address, "/metrics");
  REQUIRE(scrape.status == 200);
  // BUS_METRICS_SAMPLE=<file>: keeps this scrape (the README's sample).
  if (const char* keep = std::getenv("BUS_METRICS_SAMPLE"))
    std::ofstream(keep) << scrape.body;
  INFO(scrape.body);
  const std::string billing = "messaging_destination_name=\"billing\"";
  for (const auto& [name, value] : expected_counters(s)) {
    INFO(name);
    auto v = bus::test::sample(scrape.body, name, {billing});
    REQUIRE(v);
    CHECK(*v == static_cast<double>(value));
  }
  const std::string type = "bus_message_type=\"order_placed\"";
  CHECK(bus::test::sample(scrape.body, "messaging_process_duration_seconds_count",
                          {billing, type, "outcome=\"handled\""})
        == static_cast<double>(s.handled));
  CHECK(bus::test::sample(scrape.body, "messaging_process_duration_seconds_count",
                          {billing, type, "outcome=\"failed\""})
        == static_cast<double>(s.failed_attempts));
  // The first attempt of each message sent: four (not the redelivery).
  CHECK(bus::test::sample(scrape.body, "bus_send_to_handler_start_seconds_count", {billing, type})
        == 4.0);
  CHECK(bus::test::sample(scrape.body, "messaging_client_operation_duration_seconds_count",
                          {"messaging_operation_name=\"send\""})
        == 5.0);
  CHECK(bus::test::sample(scrape.body, "bus_slots", {billing}) == 2.0);
  CHECK(bus::test::sample(scrape.body, "bus_busy_slots", {billing}) == 0.0);
  CHECK(bus::test::sample(scrape.body, "bus_endpoint_consuming", {billing}) == 1.0);
  CHECK(bus::test::sample(scrape.body, "bus_transport_connected",
                          {"messaging_system=\"in_memory\""})
        == 1.0);

  bus->stop();
  auto after = bus::test::http_get(address, "/health/ready");
  CHECK(after.status == 503);
  CHECK(after.body.find("endpoint 'billing' is not consuming") != std::string::npos);
}

TEST_CASE("a bus without metrics serves nothing and still judges its health", "[metrics]") {
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  auto bus = rig.build(b);
  CHECK(bus->metrics_address().empty());
  CHECK_FALSE(bus->health().ready);
  REQUIRE(bus->start());
  CHECK(bus->health().ready);
  bus->stop();
}

TEST_CASE("metrics() refuses an address it cannot listen on", "[metrics]") {
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics("256.1.1.1:notaport");
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK(built.error().message.find("cannot serve metrics on '256.1.1.1:notaport'")
        != std::string::npos);
}
