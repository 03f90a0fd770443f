// A scenario on the wall clock, in an actor system with real threads: the
// way it would run in a service. Times and the interleaving of endpoints
// vary from run to run; outcomes of a well-made scenario do not.
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "event_log.hpp"
#include "fault_log.hpp"
#include "naming_transport.hpp"
#include "outbox_stores.hpp"
#include "run.hpp"
#include "run_timeline.hpp"
#include "topology.hpp"

namespace bus::scenario {

int run_on_real_time(const scenario& s, const run_options& options, const std::string& file,
                     std::ostream& out, std::ostream& err) {
  auto inner = make_transport(options);
  if (!inner) {
    err << file << ": " << inner.error().message << '\n';
    return inner.error().code == errc::invalid_configuration ? exit_invalid : exit_failed;
  }
  // Before the bus, which holds the stores until it goes.
  auto stores = outbox_stores::open(s);
  if (!stores) {
    err << file << ": " << stores.error().message << '\n';
    return exit_invalid;
  }
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system system{cfg};

  auto started = std::chrono::steady_clock::now();
  auto clock = [started] {
    return std::chrono::duration_cast<duration>(std::chrono::steady_clock::now() - started);
  };
  auto names = std::make_shared<message_names>();
  auto book = std::make_shared<script_book>(clock, s);
  // Shared with the observer, so it outlives every call of it.
  auto log = std::make_shared<event_log>(out, names, clock, s.sends);

  std::shared_ptr<spdlog::sinks::sink> sink;
  if (options.show_logs)
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  else
    sink = std::make_shared<spdlog::sinks::null_sink_mt>();
  bus_builder b{system};
  b.transport(std::make_shared<naming_transport>(
                *inner, names, [log](const raised_fault& f) { log->record_fault(f); }))
    .log_sinks({sink})
    .observe([log](const bus_event& e) { log->record(e); });
  auto actors = configure_bus(b, s, book, system, **stores);
  auto built = b.build();
  if (!built) {
    err << file << ": the bus was refused: " << to_string(built.error()) << '\n';
    return exit_invalid;
  }
  auto& bus = **built;
  if (auto ok = bus.start(); !ok) {
    err << file << ": the bus did not start: " << to_string(ok.error()) << '\n';
    return exit_failed;
  }

  int code = exit_ok;
  for (const auto& m : s.sends) {
    std::this_thread::sleep_until(started + m.at);
    if (auto sent = send_message(bus, m); !sent) {
      err << file << ": cannot send " << m.name << " to " << m.to << ": "
          << to_string(sent.error()) << '\n';
      code = exit_failed;
      break;
    }
  }
  if (code == exit_ok && !log->wait_until_finished(options.timeout)) {
    err << file << ": not every message had ended after " << options.timeout.count()
        << " s (see \"unfinished\" in the summary; --timeout gives more time)\n";
    code = exit_failed;
  }
  bus.stop();
  actors->stop();
  log->close();
  auto summary = log->summary(*book);
  add_outbox_counts(summary, s, [&bus](const std::string& name) { return bus.stats(name); });
  bool held = settle_expectations(s, log->faults(), summary, file, err);
  out << summary.dump() << '\n';
  if (options.timeline_file
      && !write_run_timeline(log->lines(), timeline_title(file), *options.timeline_file, err))
    return exit_failed;
  return code == exit_ok && !held ? exit_unmet : code;
}

} // namespace bus::scenario
