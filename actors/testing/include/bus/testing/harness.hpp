// A test harness for users of the bus (the idea of MassTransit's and
// NServiceBus's harnesses): a bus on CAF's test coordinator and virtual
// time, an in-memory transport, every event and log line recorded. A
// 30-minute redelivery takes microseconds, and a test never sleeps.
//
//   bus::testing::harness h;
//   auto b = h.builder();
//   b.message<order_placed>("order_placed").endpoint("billing", ...);
//   auto& bus = h.start(b);
//   bus.send("billing", order_placed{...});
//   h.run();                              // everything due now
//   h.advance(std::chrono::minutes(5));   // timer by timer
//   CHECK(h.error_queue("billing").size() == 1);
//
// Works with any test framework. Not thread-safe: one test, one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bus/bus.hpp"
#include "bus/events.hpp"
#include "bus/in_memory_transport.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace bus::testing {

// An event as the harness recorded it: the bus's event (whose `at` is a
// wall-clock time) and the virtual time since the harness started, which
// is what a test of timing asserts on.
struct recorded_event : bus_event {
  duration since_start{};
};

class harness {
public:
  harness();
  ~harness();
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  // The actor system, on the test coordinator: spawn your own actors here.
  [[nodiscard]] caf::actor_system& system();
  [[nodiscard]] in_memory_transport& transport();
  // Where the builder's stream endpoints keep their offsets.
  [[nodiscard]] const std::string& stream_offset_directory() const noexcept;

  // A builder on this harness's system and transport, recording events and
  // logs, with jitter seeded for reproducible delays, and stream offsets
  // kept in a directory of the harness's own (removed with it).
  [[nodiscard]] bus_builder builder();

  // Builds and starts the bus; throws std::runtime_error with the
  // configuration error's text if it is refused (a test should fail loudly).
  message_bus& start(bus_builder& b);
  [[nodiscard]] message_bus& bus();

  // Processes every message that is due, without moving time.
  void run();
  // Moves virtual time forward by `d`, stopping at every timer due on the
  // way and processing what it starts, so chained delays keep their timing.
  void advance(duration d);
  // Like advance(), as far as needed until nothing is scheduled any more
  // (at most `limit` of virtual time). Returns the virtual time that passed.
  duration advance_until_idle(duration limit = std::chrono::hours(24 * 365));
  // Like advance_until_idle(), but stops as soon as `done()` holds once the
  // work due at a moment has run, even with timers still pending: an
  // endpoint with an outbox is never idle (its sweeper and cleaner fire
  // for ever), so there the end is a condition, such as every message
  // handled. At most `limit` of virtual time; returns the time that passed.
  duration advance_until(const std::function<bool()>& done,
                         duration limit = std::chrono::hours(24 * 365));
  // Virtual time since the harness started.
  [[nodiscard]] duration elapsed() const;
  // Stops the bus and lets its endpoints drain (on virtual time).
  void stop();

  // What happened, in order, each with its virtual time since the start.
  [[nodiscard]] const std::vector<recorded_event>& events() const noexcept;
  [[nodiscard]] std::vector<recorded_event> events_of(event_kind kind) const;
  [[nodiscard]] std::vector<recorded_event> events_for(const std::string& message_id) const;
  // Log lines written by the bus's loggers, as "[logger] [level] text".
  [[nodiscard]] std::vector<std::string> log_lines() const;
  // Whether a log line so far contains `part`.
  [[nodiscard]] bool logged(const std::string& part) const;

  [[nodiscard]] endpoint_stats stats(const std::string& endpoint) const;
  [[nodiscard]] std::vector<envelope_ptr> queue(const std::string& name) const;
  [[nodiscard]] std::vector<envelope_ptr> error_queue(const std::string& endpoint) const;
  [[nodiscard]] std::vector<envelope_ptr> skipped_queue(const std::string& endpoint) const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace bus::testing
