// The outbox's metrics (issue 21): the time from a handler's commit to its
// sends marked out, and what the outbox still has to send as its sweep
// counts it, on a real SQLite file and a bus on real threads.
#include <catch2/catch.hpp>

#include <prometheus/registry.h>

#include "bus/sqlite_store.hpp"
#include "support/eventually.hpp"
#include "support/real_threads_bus.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

// The metric `name` of endpoint `endpoint`, if it has a series.
const prometheus::ClientMetric* series(prometheus::Registry& r, const std::string& name,
                                       const std::string& endpoint,
                                       std::vector<prometheus::MetricFamily>& keep) {
  keep = r.Collect();
  for (const auto& family : keep)
    if (family.name == name)
      for (const auto& m : family.metric)
        for (const auto& l : m.label)
          if (l.name == "messaging_destination_name" && l.value == endpoint)
            return &m;
  return nullptr;
}

} // namespace

TEST_CASE("outbox metrics: each commit's dispatch is timed, and the sweep counts what is still to "
          "send") {
  bus::test::scratch_directory dir;
  auto opened = bus::sqlite_store::open({dir.file("billing.db")});
  REQUIRE(opened);
  std::shared_ptr<bus::message_store> store = *opened;
  // A live process's stored sends, not ours to send: pending until it sends them.
  auto other = bus::sqlite_store::open({dir.file("billing.db")});
  REQUIRE(other);
  auto left = (*other)->receive({"billing", "theirs"}, std::chrono::system_clock::now());
  REQUIRE(left);
  REQUIRE(left->transaction->commit({"first", "second"}));

  auto registry = std::make_shared<prometheus::Registry>();
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics_registry(registry, 20ms);
  bus::outbox_options options;
  options.sweep_interval = 50ms;
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.outbox(store, options).handle<order_placed>([](const order_placed& m,
                                                     bus::handler_context& ctx) {
      if (auto sent = ctx.send("invoices", invoice_requested{m.order_id, {}}); !sent)
        throw std::runtime_error(to_string(sent.error()));
    });
  });
  b.endpoint("shipping", [](bus::endpoint_builder& e) {
    e.handle<invoice_requested>([](const invoice_requested&) {});
  });
  REQUIRE(rig.transport->declare_queue("invoices"));
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("billing")->handled == 3; }, 10s));

  std::vector<prometheus::MetricFamily> keep;
  CHECK(bus::test::eventually(
    [&] {
      const auto* d = series(*registry, "bus_outbox_dispatch_duration_seconds", "billing", keep);
      return d != nullptr && d->histogram.sample_count == 3;
    },
    10s));
  CHECK(bus::test::eventually([&] { return bus->stats("billing")->outbox_pending == 1; }, 10s));
  CHECK(bus->stats("billing")->outbox_pending_sends == 2);
  CHECK(bus::test::eventually(
    [&] {
      const auto* p = series(*registry, "bus_outbox_pending_messages", "billing", keep);
      return p != nullptr && p->gauge.value == 1.0;
    },
    10s));
  // An endpoint without an outbox has no outbox series.
  CHECK(series(*registry, "bus_outbox_pending_messages", "shipping", keep) == nullptr);
  CHECK(series(*registry, "bus_outbox_dispatch_duration_seconds", "shipping", keep) == nullptr);
  bus->stop();
}
