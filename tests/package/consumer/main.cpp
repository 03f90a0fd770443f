// Sends one message through an installed bus and exits 0 if it was handled.
#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"

struct ping {
  int n = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ping, n)

int main() {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  int handled = 0;
  bus::bus_builder b{sys};
  b.transport(std::make_shared<bus::in_memory_transport>())
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<ping>("ping")
    .endpoint("pings", [&](bus::endpoint_builder& e) {
      e.handle<ping>([&](const ping& p) { handled += p.n; });
    });
  auto bus = b.build();
  if (!bus || !(*bus)->start())
    return 1;
  if (!(*bus)->send("pings", ping{1}))
    return 1;
  (*bus)->stop();
  return (*bus)->stats("pings")->handled == 1 && handled == 1 ? 0 : 1;
}
