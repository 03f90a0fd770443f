// What every actor of one endpoint shares: its definition, the registry,
// the transport, the loggers, the clock and the counters. Built once when
// the endpoint starts and immutable afterwards (the counters are atomics),
// so the actors read it without messages or locks.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bus/endpoint_builder.hpp"
#include "bus/endpoint_counters.hpp"
#include "bus/events.hpp"
#include "bus/fault.hpp"
#include "bus/message_registry.hpp"
#include "bus/spans.hpp"
#include "bus/transport.hpp"
#include "dependency_gate.hpp"
#include "bus/policy/retry_budget.hpp"
#include "logging.hpp"
#include "recent_exceptions.hpp"

namespace bus::detail::metrics {
class endpoint_instruments;
} // namespace bus::detail::metrics

namespace bus::detail {

class stream_reader;

// What outlives one run of an endpoint (a stop and a start again keep
// counting), readable from any thread.
struct endpoint_status {
  endpoint_counters counters;
  // What its handlers threw lately, for the page's explained policies.
  recent_exceptions exceptions;
  // Handler durations for metrics; null when metrics are off. Set when the
  // endpoint is defined, before any actor or scrape sees it, then fixed.
  std::shared_ptr<metrics::endpoint_instruments> instruments;
};

// One run of an endpoint, from one launch to the end of its stop, readable
// from any thread. Each launch has its own: the actors of a failed start
// may still be ending while the retry's run, and must not mark it.
struct endpoint_run {
  std::atomic<bool> finished{false};
  // Set by the bus as it asks the endpoint to stop, before the endpoint
  // actor even sees the request, so that handlers see it at once.
  std::atomic<bool> stop_requested{false};
};

// Hands a message to the bus's scheduled sends (see scheduled_sends.hpp):
// `queue` gets it once `delay` has passed; `done` says whether it is held.
using send_later_function =
  std::function<void(const std::string& queue, envelope msg, duration delay, completion done)>;

class endpoint_runtime {
public:
  // What the bus sets for all its endpoints alike.
  struct settings {
    fault_limits limits;
    // Error-queue copies also carry the headers ServiceControl reads
    // (bus_builder::servicecontrol_error_headers).
    bool servicecontrol_headers = false;
    std::optional<std::uint64_t> jitter_seed; // empty: each consumer seeds from the OS
    event_observer observer;                  // empty: no events
    std::string dead_letter_directory = "bus-dead-letters"; // when the error queue refuses
    // CAF's test coordinator runs the actors: every handler runs inline,
    // whatever the endpoint asks for, so that virtual time stays
    // deterministic (a detached actor would run on a real thread).
    bool deterministic = false;
    span_observer spans; // empty: no spans (bus/spans.hpp)
    // The bus's dependency breakers; the runtime keeps those the endpoint
    // depends on (definition().dependencies).
    std::shared_ptr<const dependency_gates> gates;
    // The retry budget the consumers charge (issue 14); null: none.
    std::shared_ptr<bus::retry_budget> budget;
    // Where a handler's deferred messages go (ctx.defer); empty: to the
    // transport's own delayed delivery, refused where it has none.
    send_later_function send_later;
    // A stream endpoint's reading (issue 27): its position, shown and
    // saved as messages settle; null for a queue's endpoint.
    std::shared_ptr<stream_reader> stream;
  };

  endpoint_runtime(endpoint_definition definition, std::shared_ptr<const message_registry> registry,
                   transport_ptr transport, loggers log, std::function<time_point()> clock,
                   std::shared_ptr<endpoint_status> status, std::shared_ptr<endpoint_run> run,
                   settings config);
  endpoint_runtime(const endpoint_runtime&) = delete;
  endpoint_runtime& operator=(const endpoint_runtime&) = delete;

  [[nodiscard]] const endpoint_definition& definition() const noexcept { return def_; }
  [[nodiscard]] const std::string& name() const noexcept { return def_.name; }
  [[nodiscard]] const message_registry& registry() const noexcept { return *registry_; }
  [[nodiscard]] ::bus::transport& transport() const noexcept { return *transport_; }
  [[nodiscard]] const loggers& log() const noexcept { return log_; }
  [[nodiscard]] endpoint_counters& counters() const noexcept { return status_->counters; }
  [[nodiscard]] endpoint_status& status() const noexcept { return *status_; }
  [[nodiscard]] endpoint_run& run() const noexcept { return *run_; }
  [[nodiscard]] time_point now() const { return clock_(); }
  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  [[nodiscard]] const std::string& process() const noexcept { return process_; }
  [[nodiscard]] const settings& config() const noexcept { return settings_; }
  // How many deliveries of its queue the endpoint holds unsettled: one per
  // slot, and on a transport whose messages die with the process (in
  // memory) one more per slot, waiting in the endpoint. Those are offered
  // to the consumers ahead (ready_line.hpp), so a consumer that ends its
  // delivery takes the next at once, instead of sleeping until the
  // transport hands one over for its acknowledgement. On a durable broker
  // each prefetched delivery would go back to the queue when the process
  // dies, and count as a delivery of it there: one slot's worth only. A
  // stream is read one per slot.
  [[nodiscard]] std::size_t prefetch() const noexcept { return prefetch_; }
  // Whether deliveries wait in the endpoint while every slot is busy, to
  // be offered ahead: without, a consumer that looks for one looks in vain.
  [[nodiscard]] bool prefetches_ahead() const noexcept { return prefetch_ > def_.slots; }

  // Tells the observer, if any, about a step of `msg`'s journey. `fill`
  // sets the fields beyond kind, time, endpoint and message; it runs only
  // when somebody listens.
  template <class Fill>
  void emit(event_kind kind, const envelope& msg, Fill&& fill) const {
    if (!settings_.observer)
      return;
    auto e = event_about(kind, msg);
    fill(e);
    notify(e);
  }
  void emit(event_kind kind, const envelope& msg) const {
    emit(kind, msg, [](bus_event&) {});
  }
  // The event emit() would raise, for another actor to raise later with
  // emit_prepared(): null when nobody listens.
  template <class Fill>
  [[nodiscard]] std::shared_ptr<bus_event> prepare(event_kind kind, const envelope& msg,
                                                   Fill&& fill) const {
    if (!settings_.observer)
      return nullptr;
    auto e = std::make_shared<bus_event>(event_about(kind, msg));
    fill(*e);
    return e;
  }
  // Raises a prepared event (if any), stamped with the time it happens.
  void emit_prepared(const std::shared_ptr<const bus_event>& prepared) const;
  // An event about the endpoint itself (rate limiting).
  void emit(event_kind kind, std::string detail) const;

  // The dependency breakers this endpoint pauses for, and one by name (null
  // if the endpoint does not depend on it).
  [[nodiscard]] const std::vector<gate_ptr>& dependencies() const noexcept { return deps_; }
  [[nodiscard]] dependency_gate* dependency(std::string_view name) const noexcept;
  // Whether every one of them is closed (true without any); lock-free.
  [[nodiscard]] bool dependencies_closed() const noexcept;

  // The handler for messages registered as `type_name`, or null.
  [[nodiscard]] const handler_slot* find_handler(std::string_view type_name) const;

private:
  // Kind, time, endpoint and the message's id, type and delivery count.
  [[nodiscard]] bus_event event_about(event_kind kind, const envelope& msg) const;
  void notify(const bus_event& e) const noexcept;

  endpoint_definition def_;
  std::shared_ptr<const message_registry> registry_;
  transport_ptr transport_;
  std::size_t prefetch_;
  loggers log_;
  std::function<time_point()> clock_;
  std::shared_ptr<endpoint_status> status_;
  std::shared_ptr<endpoint_run> run_;
  std::string host_;
  std::string process_;
  settings settings_;
  std::unordered_map<std::string, const handler_slot*> by_type_name_;
  std::vector<gate_ptr> deps_;
};

using endpoint_runtime_ptr = std::shared_ptr<const endpoint_runtime>;

} // namespace bus::detail
