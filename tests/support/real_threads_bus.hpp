// A bus on CAF's real threads, for the tests where threads are the point
// (handlers that block, stop() from another thread). CAF gets few worker
// threads on purpose: fewer than the slots, as users often configure it.
#pragma once

#include <memory>
#include <string>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "support/sample_messages.hpp"

namespace bus::test {

struct real_threads_bus {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::shared_ptr<bus::in_memory_transport> transport = std::make_shared<bus::in_memory_transport>();

  static caf::actor_system_config& with_threads(caf::actor_system_config& c, int threads) {
    c.set("scheduler.max-threads", threads);
    return c;
  }

  explicit real_threads_bus(int caf_threads = 2) : sys(with_threads(cfg, caf_threads)) {}

  bus::bus_builder builder() {
    bus::bus_builder b{sys};
    b.transport(transport).log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()});
    b.message<order_placed>("order_placed").message<invoice_requested>("invoice_requested");
    return b;
  }

  std::unique_ptr<bus::message_bus> build(bus::bus_builder& b) {
    auto built = b.build();
    REQUIRE(built);
    return std::move(*built);
  }
};

} // namespace bus::test
