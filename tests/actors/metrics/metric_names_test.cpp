// The metric names and labels a bus registers (the table in
// docs/metrics.md), read from a registry the user passes in, as their own
// exposer would see it; and that registry's counters catch up with
// bus.stats() through the bus's periodic sync.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <prometheus/registry.h>

#include "support/eventually.hpp"
#include "support/handler_gate.hpp"
#include "support/real_threads_bus.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;

namespace {

// Family name -> the label names of its first series.
std::map<std::string, std::set<std::string>> families_of(prometheus::Registry& r) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& family : r.Collect()) {
    auto& labels = out[family.name];
    if (!family.metric.empty())
      for (const auto& l : family.metric.front().label)
        labels.insert(l.name);
  }
  return out;
}

// The value of the gauge `name` of the endpoint `endpoint`; none if absent.
std::optional<double> gauge_of(prometheus::Registry& r, const std::string& name,
                               const std::string& endpoint) {
  for (const auto& family : r.Collect())
    if (family.name == name)
      for (const auto& metric : family.metric)
        for (const auto& l : metric.label)
          if (l.name == "messaging_destination_name" && l.value == endpoint)
            return metric.gauge.value;
  return std::nullopt;
}

double counter_value(prometheus::Registry& r, const std::string& name) {
  for (const auto& family : r.Collect())
    if (family.name == name && !family.metric.empty())
      return family.metric.front().counter.value;
  return -1;
}

} // namespace

TEST_CASE("the bus registers its families, named after OpenTelemetry or with bus_, with their "
          "labels, in the user's registry",
          "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms);
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  auto bus = rig.build(b);

  const std::set<std::string> endpoint{"messaging_destination_name"};
  const std::set<std::string> typed{"messaging_destination_name", "bus_message_type"};
  const std::set<std::string> by_outcome{"messaging_destination_name", "bus_message_type",
                                         "outcome"};
  const std::set<std::string> system{"messaging_system"};
  const std::map<std::string, std::set<std::string>> expected = {
    {"messaging_client_consumed_messages_total", endpoint},
    {"bus_messages_handled_total", endpoint},
    {"bus_failed_attempts_total", endpoint},
    {"bus_immediate_retries_total", endpoint},
    {"bus_redeliveries_scheduled_total", endpoint},
    {"bus_messages_dead_lettered_total", endpoint},
    {"bus_messages_discarded_total", endpoint},
    {"bus_messages_skipped_total", endpoint},
    {"bus_messages_requeued_total", endpoint},
    {"bus_retries_denied_total", endpoint},
    {"bus_messages_expired_total", endpoint},
    {"bus_dependency_pauses_total", endpoint},
    {"bus_messages_held_back_total", endpoint},
    {"bus_inbox_duplicates_total", endpoint},
    {"bus_inbox_cleanups_total", endpoint},
    {"bus_inbox_records_cleaned_total", endpoint},
    {"bus_dependency_probes_total", endpoint},
    {"bus_dependency_paused", endpoint},
    {"bus_rate_limit_transitions_total", {"messaging_destination_name", "to"}},
    {"bus_messages_in_flight", endpoint},
    {"bus_busy_slots", endpoint},
    {"bus_slots", endpoint},
    {"bus_concurrency_limit", endpoint},
    {"bus_redeliveries_pending", endpoint},
    {"bus_rate_limited", endpoint},
    {"bus_endpoint_consuming", endpoint},
    {"messaging_process_duration_seconds", by_outcome},
    {"bus_send_to_handler_start_seconds", typed},
    {"bus_transport_reconnects_total", system},
    {"bus_transport_republished_total", system},
    {"bus_transport_connected", system},
    {"messaging_client_operation_duration_seconds", {"messaging_system", "messaging_operation_name"}},
  };
  // Families with series only on an endpoint with an outbox
  // (tests/stores/outbox_metrics_test.cpp checks them) or one that reads a
  // stream (stream_endpoint_test.cpp): absent here, documented all the same.
  const std::vector<std::string> not_here{"bus_outbox_pending_messages",
                                          "bus_outbox_pending_sends",
                                          "bus_outbox_dispatch_duration_seconds",
                                          "bus_stream_offset", "bus_stream_lag_messages"};
  CHECK(families_of(*registry) == expected);

  // docs/metrics.md documents every family.
  std::ifstream doc(BUS_SOURCE_DIR "/docs/metrics.md");
  REQUIRE(doc);
  std::stringstream text;
  text << doc.rdbuf();
  for (const auto& [name, labels] : expected) {
    INFO(name);
    CHECK(text.str().find("`" + name) != std::string::npos);
  }
  for (const auto& name : not_here) {
    INFO(name);
    CHECK(text.str().find("`" + name) != std::string::npos);
  }

  REQUIRE(bus->start());
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->send("billing", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("billing")->handled == 3; }, 10s));
  CHECK(bus::test::eventually(
    [&] { return counter_value(*registry, "bus_messages_handled_total") == 3.0; }, 10s));
  CHECK(counter_value(*registry, "messaging_client_consumed_messages_total")
        == static_cast<double>(bus->stats("billing")->received));
  bus->stop();
}

namespace {

// How many series of the registry carry the label endpoint="`name`".
int series_of_endpoint(prometheus::Registry& r, const std::string& name) {
  int n = 0;
  for (const auto& family : r.Collect())
    for (const auto& metric : family.metric)
      for (const auto& l : metric.label)
        if (l.name == "messaging_destination_name" && l.value == name)
          ++n;
  return n;
}

} // namespace

TEST_CASE("a removed endpoint's series leave the registry, and the others stay", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms);
  for (const char* name : {"billing", "audit"})
    b.endpoint(name, [](bus::endpoint_builder& e) {
      e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
    });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus::test::eventually([&] { return series_of_endpoint(*registry, "audit") > 0; }, 10s));
  auto billing = series_of_endpoint(*registry, "billing");

  REQUIRE(bus->remove_endpoint("audit"));
  CHECK(bus::test::eventually([&] { return series_of_endpoint(*registry, "audit") == 0; }, 10s));
  CHECK(series_of_endpoint(*registry, "billing") == billing);
  bus->stop();
}

TEST_CASE("an endpoint that reads a stream has its offset and lag as gauges, and only that one",
          "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  bus::test::scratch_directory offsets;
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms).stream_offset_directory(offsets.file("offsets"));
  b.stream_endpoint("projection", "audit", [](bus::endpoint_builder& e) {
     e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
   }).endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus::test::eventually(
    [&] { return gauge_of(*registry, "bus_stream_offset", "projection") == -1.0; }, 10s));
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->send("audit", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
  CHECK(bus::test::eventually(
    [&] { return gauge_of(*registry, "bus_stream_offset", "projection") == 2.0; }, 10s));
  CHECK(gauge_of(*registry, "bus_stream_lag_messages", "projection") == 0.0);
  CHECK_FALSE(gauge_of(*registry, "bus_stream_offset", "billing"));
  bus->stop();
}

namespace {

struct ledger_down : std::runtime_error {
  ledger_down() : std::runtime_error("ledger unavailable") {}
};

} // namespace

TEST_CASE("an endpoint paused for its dependency shows its deliveries in flight and no busy slot",
          "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  bus::dependency_breaker_settings ledger;
  ledger.consecutive_failures = 1; // the first failure opens it
  ledger.open_wait = 1h;           // and no probe comes during the test
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms)
    .dependency("ledger", ledger)
    .add_resilience([](bus::policy_builder& p) { p.on<ledger_down>().trips("ledger"); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(2).handle<bus::test::order_placed>(
        [](const bus::test::order_placed&) { throw ledger_down(); });
    });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 10; ++i)
    REQUIRE(bus->send("billing", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
  // Paused, the endpoint holds what it took (in memory two per slot), and
  // no slot runs anything: an operator must not read a saturated endpoint.
  REQUIRE(bus::test::eventually(
    [&] {
      return gauge_of(*registry, "bus_dependency_paused", "billing") == 1.0
             && gauge_of(*registry, "bus_messages_in_flight", "billing") == 4.0;
    },
    10s));
  CHECK(bus::test::eventually([&] { return gauge_of(*registry, "bus_busy_slots", "billing") == 0.0; },
                              10s));
  CHECK(bus->stats("billing")->busy_slots == 0);
  bus->stop();
}

TEST_CASE("busy slots count the handlers running, not the deliveries waiting behind them",
          "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  auto gate = std::make_shared<bus::test::handler_gate>();
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms).endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2).handle<bus::test::order_placed>(
      [gate](const bus::test::order_placed&) { (void)gate->pass(); });
  });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 6; ++i)
    REQUIRE(bus->send("billing", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
  // Both slots block; in memory the endpoint holds two more behind them.
  REQUIRE(gate->wait_inside(2));
  REQUIRE(bus::test::eventually(
    [&] {
      auto s = bus->stats("billing");
      return s && s->in_flight == 4 && s->busy_slots == 2;
    },
    10s));
  CHECK(bus::test::eventually([&] { return gauge_of(*registry, "bus_busy_slots", "billing") == 2.0; },
                              10s));
  gate->open();
  REQUIRE(bus::test::eventually([&] { return bus->stats("billing")->handled == 6; }, 10s));
  CHECK(bus::test::eventually([&] { return bus->stats("billing")->busy_slots == 0; }, 10s));
  bus->stop();
}
