// Readiness over HTTP follows the broker: a bus on RabbitMQ that serves
// its health answers /health/ready with 503 and names the transport while
// the broker's application is stopped, and 200 again once it is started
// and both connections came back; the scrape counts the reconnects.
//
// It stops the broker, so it runs on the node of its own the restart test
// uses (ctest fixture rabbitmq_restart), one of them at a time.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "actors/metrics/scrape.hpp"
#include "broker.hpp"
#include "bus/bus.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;

namespace {

struct readiness_probe {
  std::string id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(readiness_probe, id)

// rabbitmqctl on the test's node: stop_app closes every connection and the
// listener, start_app opens them again, the node and its data stay.
void broker_app(const std::string& command) {
  auto line = bus::test::broker_env("BUS_RABBITMQ_CTL") + " " + command + " >/dev/null 2>&1";
  REQUIRE(std::system(line.c_str()) == 0);
}

} // namespace

TEST_CASE("readiness over HTTP turns to not ready while the broker is stopped and back to ready "
          "once it is started",
          "[rabbitmq][metrics][restart]") {
  auto settings = bus::test::test_settings();
  settings.reconnect_delay_max = 500ms;
  auto transport = bus::test::connect_transport(settings);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto endpoint = bus::test::unique_name("readiness.billing");
  bus::bus_builder b{sys};
  b.name("readiness")
    .transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<readiness_probe>(bus::test::unique_name("readiness_probe"))
    .metrics("127.0.0.1:0")
    .endpoint(endpoint, [](bus::endpoint_builder& e) {
      e.handle<readiness_probe>([](const readiness_probe&) {});
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  auto address = bus.metrics_address();
  auto ready = [&] { return bus::test::http_get(address, "/health/ready"); };
  REQUIRE(bus::test::eventually([&] { return ready().status == 200; }, 10s));

  broker_app("stop_app");
  bus::test::http_answer down;
  CHECK(bus::test::eventually(
    [&] {
      down = ready();
      return down.status == 503;
    },
    30s));
  CHECK(down.body.find("transport rabbitmq is not connected") != std::string::npos);

  broker_app("start_app");
  bus::test::http_answer up;
  CHECK(bus::test::eventually(
    [&] {
      up = ready();
      return up.status == 200;
    },
    60s));
  CHECK(up.body == "ready\n");

  auto scrape = bus::test::http_get(address, "/metrics");
  REQUIRE(scrape.status == 200);
  auto reconnects = bus::test::sample(scrape.body, "bus_transport_reconnects_total",
                                      {"messaging_system=\"rabbitmq\""});
  REQUIRE(reconnects);
  CHECK(*reconnects >= 2.0); // the publishing and the consuming connection
  CHECK(*reconnects == static_cast<double>(transport->health().reconnects));
  bus.stop();
}
