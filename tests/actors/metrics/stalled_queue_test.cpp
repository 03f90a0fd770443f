// A transport that reports a stalled broker queue (a RabbitMQ delay level
// that holds messages it does not forward): readiness stays 200 and names
// the queue and the remedy in a warning line, the scrape carries its held
// messages per queue, and both clear when the queue moves again.
#include <catch2/catch.hpp>

#include <mutex>

#include "scrape.hpp"
#include "support/forwarding_transport.hpp"
#include "support/real_threads_bus.hpp"

namespace {

// The in-memory transport with a stalled list the test sets.
class stalling_transport : public bus::test::forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;
  bus::transport_health health() const override {
    auto h = inner_.health();
    std::lock_guard<std::mutex> guard(mutex_);
    h.stalled = stalled_;
    return h;
  }
  void set(std::vector<bus::stalled_queue> stalled) {
    std::lock_guard<std::mutex> guard(mutex_);
    stalled_ = std::move(stalled);
  }

private:
  mutable std::mutex mutex_;
  std::vector<bus::stalled_queue> stalled_;
};

} // namespace

TEST_CASE("a stalled broker queue is a readiness warning with its remedy and a gauge per queue, "
          "not a reason to leave service",
          "[metrics][http]") {
  bus::test::real_threads_bus rig;
  auto stalling = std::make_shared<stalling_transport>(*rig.transport);
  auto b = rig.builder();
  b.transport(stalling).metrics("127.0.0.1:0");
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  auto address = bus->metrics_address();
  const std::string level = "bus.delay.1000ms.28.level.03";
  const std::string series = "messaging_destination_name=\"" + level + "\"";

  stalling->set({{level, 7, std::chrono::seconds(95), "busctl move-leader " + level}});
  auto ready = bus::test::http_get(address, "/health/ready");
  CHECK(ready.status == 200);
  CHECK_THAT(ready.body, Catch::StartsWith("ready\n"));
  CHECK_THAT(ready.body, Catch::Contains("warning: queue '" + level
                                         + "' holds 7 messages that have not moved for 95 s; "
                                           "remedy: busctl move-leader "
                                         + level));
  CHECK(bus->health().ready);
  CHECK(bus->health().warnings.size() == 1);
  auto scrape = bus::test::http_get(address, "/metrics");
  CHECK(bus::test::sample(scrape.body, "bus_transport_stalled_messages", {series}) == 7.0);

  stalling->set({});
  auto after = bus::test::http_get(address, "/health/ready");
  CHECK(after.status == 200);
  CHECK(after.body == "ready\n");
  scrape = bus::test::http_get(address, "/metrics");
  CHECK(bus::test::sample(scrape.body, "bus_transport_stalled_messages", {series}) == 0.0);
  bus->stop();
}
