// A scenario on virtual time: the bus runs on CAF's test coordinator through
// bus::testing::harness, a single thread, jitter seeded. Events come out in
// the same order with the same times on every run.
#include <algorithm>
#include <stdexcept>

#include "bus/testing/harness.hpp"
#include "event_log.hpp"
#include "fault_log.hpp"
#include "naming_transport.hpp"
#include "outbox_stores.hpp"
#include "run.hpp"
#include "run_timeline.hpp"
#include "topology.hpp"

namespace bus::scenario {

namespace {

// The harness owns its transport for the whole run; the decorator only
// borrows it.
transport_ptr borrowed(transport& t) { return transport_ptr(transport_ptr(), &t); }

// How long past the last send a run with an outbox may go before what is
// still going is reported unfinished: its sweeper and cleaner keep timers
// pending for ever, so the run cannot wait for idleness. A week, the
// outbox's retention, which the bus allows no retry of an outbox endpoint
// to outlast; longer if the bus lets retries go on for longer elsewhere.
duration outbox_run_limit(const scenario& s) {
  duration last_send{};
  for (const auto& m : s.sends)
    last_send = std::max(last_send, m.at);
  return last_send + std::max<duration>(std::chrono::hours(24 * 7),
                                        s.bus.max_retry_time.value_or(std::chrono::hours(24)));
}

} // namespace

int run_on_virtual_time(const scenario& s, const run_options& options, const std::string& file,
                        std::ostream& out, std::ostream& err) {
  // Before the harness: the bus it owns holds the stores until it goes.
  auto stores = outbox_stores::open(s);
  if (!stores) {
    err << file << ": " << stores.error().message << '\n';
    return exit_invalid;
  }
  bus::testing::harness h;
  auto clock = [&h] { return h.elapsed(); };
  auto names = std::make_shared<message_names>();
  auto book = std::make_shared<script_book>(clock, s);
  // Shared with the observer: the harness destroys the bus last, and a
  // late event must still find its log.
  auto log = std::make_shared<event_log>(out, names, clock, s.sends);

  auto b = h.builder();
  b.transport(std::make_shared<naming_transport>(
                borrowed(h.transport()), names,
                [log](const raised_fault& f) { log->record_fault(f); }))
    .observe([log](const bus_event& e) { log->record(e); });
  auto actors = configure_bus(b, s, book, h.system(), **stores);
  message_bus* bus = nullptr;
  try {
    bus = &h.start(b);
  } catch (const std::runtime_error& e) {
    // On the in-memory transport only a refused configuration stops a start.
    err << file << ": " << e.what() << '\n';
    return exit_invalid;
  }

  for (const auto& m : s.sends) {
    if (m.at > h.elapsed())
      h.advance(m.at - h.elapsed());
    if (auto sent = send_message(*bus, m); !sent) {
      err << file << ": cannot send " << m.name << " to " << m.to << ": "
          << to_string(sent.error()) << '\n';
      return exit_failed;
    }
  }
  if ((*stores)->empty())
    h.advance_until_idle();
  else
    h.advance_until([&] { return log->finished(); }, outbox_run_limit(s));
  h.stop();
  actors->stop();
  h.run();

  log->close();
  auto summary = log->summary(*book);
  add_outbox_counts(summary, s, [bus](const std::string& name) { return bus->stats(name); });
  bool held = settle_expectations(s, log->faults(), summary, file, err);
  out << summary.dump() << '\n';
  if (options.show_logs)
    for (const auto& line : h.log_lines())
      err << line << '\n';
  if (options.timeline_file
      && !write_run_timeline(log->lines(), timeline_title(file), *options.timeline_file, err))
    return exit_failed;
  return held ? exit_ok : exit_unmet;
}

} // namespace bus::scenario
