// The state behind message_bus (its pimpl), shared by the files of the
// facade, each with one job:
//
//   builder.cpp    bus_builder: collects the configuration, checks it
//                  whole, and makes the bus
//   lifecycle.cpp  start, stop, adding and removing endpoints: launching
//                  an endpoint on the transport and its actor
//   sending.cpp    sends, publishes, requests and scheduled sends from
//                  outside a handler, and outbox sessions
//   queries.cpp    what the bus says of itself: stats, health, explain
//   bus_state.cpp  the views the metrics and the page read, and the
//                  helpers of the state below
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "bus/bus.hpp"
#include "dashboard/dashboard.hpp"
#include "dependencies.hpp"
#include "endpoint_runtime.hpp"
#include "logging.hpp"
#include "metrics/instruments.hpp"
#include "metrics/service.hpp"
#include "request_client.hpp"
#include "resilience_budget.hpp"
#include "scheduled_sends.hpp"

namespace bus {

namespace detail {

// "a, b, c": the name `name_of` gives each item of `items`.
template <class Items, class NameOf> std::string join_names(const Items& items, NameOf name_of) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + std::string(name_of(item));
  return out;
}

// The lines, one per line: a configuration's mistakes in one error.
[[nodiscard]] std::string join_lines(const std::vector<std::string>& lines);

} // namespace detail

struct message_bus::impl {
  struct endpoint_entry {
    endpoint_definition definition; // each start gives its runtime a copy
    std::shared_ptr<detail::endpoint_status> status = std::make_shared<detail::endpoint_status>();
    // The run of the last start that succeeded: null until started; its
    // flags say whether it was asked to stop and whether it finished.
    std::shared_ptr<detail::endpoint_run> run;
    caf::actor actor;
    std::shared_ptr<retry_budget> budget; // the run's, for the page; null: none
    bool removed = false; // remove_endpoint(): never started again, counters still readable

    [[nodiscard]] bool active() const { return actor && !run->finished.load(); }
  };

  // An endpoint launched (consuming, its deliveries waiting) whose start
  // has not been decided yet.
  struct launched {
    std::shared_ptr<detail::endpoint_run> run;
    caf::actor actor;
    std::shared_ptr<retry_budget> budget;
  };

  // A bus is created, runs, and after a stop may run again; sends from
  // outside are refused once it stopped, so nothing is queued unseen.
  enum class phase { created, running, stopped };

  caf::actor_system* system = nullptr;
  std::shared_ptr<message_registry> registry;
  transport_ptr transport;
  std::string name;
  std::string reply_queue;     // fixed by the builder, or this bus's own
  bool own_reply_queue = true; // made for this bus: temporary on a broker
  detail::loggers log;
  std::function<time_point()> clock;
  recoverability_scopes scopes; // host, bus and transport
  recoverability_options options;
  fault_limits limits;
  bool servicecontrol_headers = false;
  std::optional<std::uint64_t> jitter_seed;
  event_observer observer;
  std::string dead_letter_directory;
  std::string stream_offset_directory;
  span_observer spans;
  std::map<std::string, dependency_breaker_settings> dependencies; // as declared
  std::shared_ptr<const detail::dependency_gates> gates;           // one per declared dependency
  detail::shared_budgets budgets; // retry budgets shared by name (issue 14); under `lifecycle`

  // Two locks, as the facade is called from any thread. `lifecycle` takes
  // turns between start, add_endpoint, remove_endpoint and request_stop,
  // and is held across their broker round trips; only they add or erase
  // endpoints. `mutex` guards the entries' contents and is only ever held
  // briefly, so that what reads the bus (metrics, health, stats,
  // stopped()) never waits for a broker. Always `lifecycle` first.
  std::mutex lifecycle;
  mutable std::mutex mutex;
  std::map<std::string, endpoint_entry> endpoints;
  std::atomic<phase> state{phase::created};
  bool deterministic = false; // CAF's test coordinator runs the actors
  // Scheduled sends (send_at, defer) of the bus and its handlers; shared
  // with every endpoint's runtime.
  std::shared_ptr<detail::scheduled_sends> later;
  std::mutex requests_mutex;                        // guards requests
  std::shared_ptr<detail::request_client> requests; // made by the first request
  // Metrics: null when off, so sends and handlers pay one null check.
  std::shared_ptr<detail::metrics::send_instruments> sends;
  // Last member: destroyed first, so no scrape runs into a bus half gone.
  std::unique_ptr<detail::metrics::service> metrics;

  // The request client, made by the first request.
  std::shared_ptr<detail::request_client> request_client();

  // With metrics on, gives a new endpoint its handler instruments, indexed
  // like its handlers. Called as the entry is made, before anyone reads it.
  void equip(endpoint_entry& e) const;

  // What metrics and health read of the bus, taken under the lock.
  detail::metrics::bus_view view() const;

  // What the page reads of the bus: the metrics' view and the rest.
  detail::dashboard::view dashboard_view() const;

  // message_bus::explain.
  result<explanation> explain(const std::string& endpoint, const std::string& message_type,
                              const std::exception_ptr& exception) const;

  // The recoverability policy of each of `endpoint`'s handlers, as the
  // page describes it (bus/policy/json.hpp): message type and policy.
  result<std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>>>
  policies(const std::string& endpoint) const;

  // What `endpoint`'s handlers threw lately (the page explains those).
  result<std::vector<detail::recent_exceptions::entry>>
  recent_exceptions(const std::string& endpoint) const;

  // Declares the endpoint's queues and subscriptions, spawns its actor and
  // consumes. Its deliveries wait in the actor until commit(); a launch that
  // fails leaves nothing consuming and its actor stopping.
  result<launched> launch(const endpoint_entry& e);

  // The start succeeded: the launch becomes the endpoint's run, and its
  // deliveries go to its consumers.
  static void commit(endpoint_entry& e, launched l);

  // The start failed elsewhere: the launch stops consuming now, before a
  // retry can consume the same queue, and its actor gives back what it
  // took, unhandled. The entry keeps its last run: a retry may go at once.
  void abandon(const endpoint_entry& e, const launched& l) const;

  // How a handler's deferred message is handed to the scheduled sends.
  detail::send_later_function send_later() const;

  // Asks a running endpoint to stop: it drains what is in flight.
  static void stop_endpoint(detail::endpoint_run& run, const caf::actor& actor);

  // The effective policy of every handler, once, so an operator can see
  // what a failure will lead to before the first one happens.
  void log_policies(const endpoint_definition& def) const;
};

} // namespace bus
