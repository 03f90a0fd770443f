// A bus on CAF's test coordinator: nothing runs until the test drives the
// scheduler, and every timer uses a manual clock, so a test never sleeps.
// Log lines go to a string the test can read.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include <caf/all.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "support/sample_messages.hpp"

namespace bus::test {

struct caf_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::shared_ptr<bus::in_memory_transport> transport = std::make_shared<bus::in_memory_transport>();
  std::ostringstream log_text;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> log_sink =
    std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text);

  static caf::actor_system_config& testing(caf::actor_system_config& c) {
    c.set("scheduler.policy", caf::atom("testing"));
    c.set("logger.verbosity", caf::atom("quiet"));
    return c;
  }

  caf_fixture()
    : sys(testing(cfg)),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    log_sink->set_pattern("[%n] [%l] %v");
  }

  ~caf_fixture() {
    // Pending virtual timers keep their actors alive; drop them so the
    // actor system can shut down.
    sched.clock().cancel_all();
    sched.run();
  }

  // A builder on this fixture's system and transport, logging into log_text,
  // with the sample messages registered.
  bus::bus_builder builder() {
    bus::bus_builder b{sys};
    b.transport(transport).log_sinks({log_sink});
    b.message<order_placed>("order_placed").message<invoice_requested>("invoice_requested");
    return b;
  }

  // Builds and starts, failing the test on a configuration error.
  std::unique_ptr<bus::message_bus> start(bus::bus_builder& b) {
    auto built = b.build();
    if (!built)
      FAIL(to_string(built.error()));
    auto started = (*built)->start();
    if (!started)
      FAIL(to_string(started.error()));
    sched.run();
    return std::move(*built);
  }

  bus::endpoint_stats stats(const bus::message_bus& b, const std::string& endpoint) {
    auto s = b.stats(endpoint);
    REQUIRE(s.has_value());
    return *s;
  }

  // The number of log lines containing `text`.
  std::size_t log_count(const std::string& text) const {
    std::size_t n = 0;
    std::istringstream in(log_text.str());
    for (std::string line; std::getline(in, line);)
      if (line.find(text) != std::string::npos)
        ++n;
    return n;
  }
};

} // namespace bus::test
