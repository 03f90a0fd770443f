// The output of a run: one JSON object per line for each event of the bus,
// as it happens, and a summary at the end (docs/scenarios.md shows both).
//
// record() is the bus's observer: thread-safe, quick, and it never throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/events.hpp"
#include "fault_log.hpp"
#include "naming_transport.hpp"
#include "script_book.hpp"

namespace bus::scenario {

class event_log {
public:
  // `sends`: the scenario's messages, in the order they are sent; `clock`:
  // the time since the start of the run. The messages handlers send are
  // learnt from `names` as they go out.
  event_log(std::ostream& out, std::shared_ptr<const message_names> names,
            std::function<duration()> clock, const std::vector<send_spec>& sends);

  void record(const bus_event& e) noexcept;
  // A fault<T> the bus raised: a "fault_raised" line, kept for faults().
  // Thread-safe, never throws.
  void record_fault(const raised_fault& f) noexcept;
  [[nodiscard]] std::vector<raised_fault> faults() const;

  // Whether every delivery of every message has ended: handled,
  // dead-lettered, discarded or skipped. A message's deliveries are its
  // copies ("copies"); for one a handler sent, each message id it went out
  // with.
  [[nodiscard]] bool finished() const;
  // Waits until finished() or `timeout` has passed (wall clock); returns
  // finished().
  bool wait_until_finished(std::chrono::steady_clock::duration timeout);

  // Ignores every later event, so that the summary stays the last line
  // even if stopping the bus still reports something.
  void close();

  // {"summary": {...}}: the outcome of each message and the count of each
  // event, with the attempts the book counted.
  [[nodiscard]] nlohmann::ordered_json summary(const script_book& book) const;

  // Every event line written so far, in order (what --timeline draws).
  [[nodiscard]] std::vector<nlohmann::ordered_json> lines() const;

  // The JSON line for `e` (without the newline), names resolved.
  [[nodiscard]] nlohmann::ordered_json line_of(const bus_event& e) const;
  [[nodiscard]] nlohmann::ordered_json line_of(const raised_fault& f) const;

private:
  // With mutex_ held. Every message: the scenario's, then those handlers
  // sent, in the order they first went out.
  [[nodiscard]] std::vector<std::string> all_messages() const;
  [[nodiscard]] bool ended(const std::string& name) const;
  [[nodiscard]] bool all_ended() const;

  std::ostream* out_;
  std::shared_ptr<const message_names> names_;
  std::function<duration()> clock_;
  std::vector<std::string> messages_; // the scenario's own, in the order they are sent
  std::map<std::string, int> copies_; // the scenario's own -> deliveries that must end

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<event_kind, std::size_t> counts_;
  std::map<std::string, std::string> outcomes_; // message name -> its last ending event
  std::map<std::string, std::size_t> endings_;  // message name -> ending events seen
  std::vector<raised_fault> faults_;
  std::vector<nlohmann::ordered_json> lines_; // the events' lines, as written
  bool closed_ = false;
};

} // namespace bus::scenario
