// A scenario on virtual time: the bus runs on CAF's test coordinator through
// bus::testing::harness, a single thread, jitter seeded. Events come out in
// the same order with the same times on every run.
#include <stdexcept>

#include "bus/testing/harness.hpp"
#include "event_log.hpp"
#include "fault_log.hpp"
#include "naming_transport.hpp"
#include "run.hpp"
#include "topology.hpp"

namespace bus::scenario {

namespace {

std::vector<std::string> message_names_of(const scenario& s) {
  std::vector<std::string> out;
  for (const auto& m : s.sends)
    out.push_back(m.name);
  return out;
}

// The harness owns its transport for the whole run; the decorator only
// borrows it.
transport_ptr borrowed(transport& t) { return transport_ptr(transport_ptr(), &t); }

} // namespace

int run_on_virtual_time(const scenario& s, const run_options& options, const std::string& file,
                        std::ostream& out, std::ostream& err) {
  bus::testing::harness h;
  auto clock = [&h] { return h.elapsed(); };
  auto names = std::make_shared<message_names>();
  auto book = std::make_shared<script_book>(clock, s);
  // Shared with the observer: the harness destroys the bus last, and a
  // late event must still find its log.
  auto log = std::make_shared<event_log>(out, names, clock, message_names_of(s));

  auto b = h.builder();
  b.transport(std::make_shared<naming_transport>(
                borrowed(h.transport()), names,
                [log](const raised_fault& f) { log->record_fault(f); }))
    .observe([log](const bus_event& e) { log->record(e); });
  auto actors = configure_bus(b, s, book, h.system());
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
  h.advance_until_idle();
  h.stop();
  actors->stop();
  h.run();

  log->close();
  auto summary = log->summary(*book);
  bool held = settle_expectations(s, log->faults(), summary, file, err);
  out << summary.dump() << '\n';
  if (options.show_logs)
    for (const auto& line : h.log_lines())
      err << line << '\n';
  return held ? exit_ok : exit_unmet;
}

} // namespace bus::scenario
