#include "bus/bus.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include <caf/all.hpp>

#include "atoms.hpp"
#include "dashboard/dashboard.hpp"
#include "dependencies.hpp"
#include "endpoint_actor.hpp"
#include "endpoint_runtime.hpp"
#include "logging.hpp"
#include "metrics/instruments.hpp"
#include "metrics/service.hpp"
#include "outgoing.hpp"
#include "tracing.hpp"
#include "resilience_budget.hpp"
#include "request_client.hpp"
#include "scheduled_sends.hpp"
#include "validation.hpp"

namespace bus {

namespace {

// Wall-clock time that advances with the actor system's clock, so a bus on
// CAF's test coordinator stamps virtual time into headers and faults.
std::function<time_point()> clock_of(caf::actor_system& sys) {
  auto* clock = &sys.clock();
  auto steady_start = clock->now();
  auto wall_start = std::chrono::system_clock::now();
  return [clock, steady_start, wall_start] {
    return wall_start
           + std::chrono::duration_cast<time_point::duration>(clock->now() - steady_start);
  };
}

// A reply queue of this bus's own: the host and the process tell apart
// processes sharing a broker, the counter buses of one process.
std::string own_reply_queue(const std::string& bus_name) {
  static std::atomic<unsigned> buses{0};
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof host, "%s", "host");
  return bus_name + "_replies_" + host + "_" + std::to_string(::getpid()) + "_"
         + std::to_string(buses++);
}

// "a, b, c": the name `name_of` gives each item of `items`.
template <class Items, class NameOf>
std::string join_names(const Items& items, NameOf name_of) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + std::string(name_of(item));
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty())
      out += '\n';
    out += line;
  }
  return out;
}

} // namespace

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
  std::string reply_queue; // fixed by the builder, or this bus's own
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
  span_observer spans;
  std::map<std::string, dependency_breaker_settings> dependencies; // as declared
  std::shared_ptr<const detail::dependency_gates> gates; // one per declared dependency
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
  std::mutex requests_mutex; // guards requests
  std::shared_ptr<detail::request_client> requests; // made by the first request

  std::shared_ptr<detail::request_client> request_client() {
    std::lock_guard<std::mutex> guard(requests_mutex);
    if (!requests)
      requests = std::make_shared<detail::request_client>(*system, transport, log, reply_queue,
                                                          own_reply_queue, deterministic);
    return requests;
  }
  // Metrics: null when off, so sends and handlers pay one null check.
  std::shared_ptr<detail::metrics::send_instruments> sends;
  // Last member: destroyed first, so no scrape runs into a bus half gone.
  std::unique_ptr<detail::metrics::service> metrics;

  // With metrics on, gives a new endpoint its handler instruments, indexed
  // like its handlers. Called as the entry is made, before anyone reads it.
  void equip(endpoint_entry& e) const {
    if (!sends)
      return;
    std::vector<std::string> types;
    for (const auto& slot : e.definition.handlers) {
      auto type = registry->find(slot.cpp_type);
      types.push_back(type ? type->name : std::string("?"));
    }
    e.status->instruments = std::make_shared<detail::metrics::endpoint_instruments>(std::move(types));
  }

  // What metrics and health read of the bus, taken under the lock.
  detail::metrics::bus_view view() const {
    detail::metrics::bus_view v;
    v.transport_name = std::string(transport->name());
    v.transport = transport->health();
    std::lock_guard<std::mutex> guard(mutex);
    v.running = state == phase::running;
    for (const auto& [name, e] : endpoints)
      if (!e.removed)
        v.endpoints.push_back({name, e.definition.slots,
                               v.running && e.active() && !e.run->stop_requested.load(),
                               e.status, e.definition.store != nullptr});
    return v;
  }

  // What the page reads of the bus: the metrics' view and the rest.
  detail::dashboard::view dashboard_view() const {
    detail::dashboard::view v;
    v.bus_name = name;
    v.now = clock();
    v.bus = view();
    v.gates = gates;
    std::lock_guard<std::mutex> guard(mutex);
    for (const auto& ev : v.bus.endpoints) {
      auto e = endpoints.find(ev.name); // removed between the two locks: no extras
      v.extras.push_back(e == endpoints.end() ? detail::dashboard::endpoint_extras{}
                                              : detail::dashboard::endpoint_extras{
                                                  e->second.definition.error_queue,
                                                  e->second.budget, e->second.definition.adaptive});
    }
    return v;
  }

  // message_bus::explain.
  result<explanation> explain(const std::string& endpoint, const std::string& message_type,
                              const std::exception_ptr& exception) const {
    std::shared_ptr<const recoverability_config> config;
    {
      std::lock_guard<std::mutex> guard(mutex);
      auto it = endpoints.find(endpoint);
      if (it == endpoints.end())
        return error{errc::invalid_configuration,
                     "no endpoint '" + endpoint + "' (the endpoints: "
                       + join_names(endpoints, [](const auto& e) { return e.first; }) + ")"};
      const auto& handlers = it->second.definition.handlers;
      auto name_of = [this](const detail::handler_slot& h) {
        return registry->find(h.cpp_type)->name;
      };
      for (const auto& h : handlers)
        if (name_of(h) == message_type || (message_type.empty() && handlers.size() == 1))
          config = h.recoverability;
      if (!config)
        return error{errc::invalid_configuration,
                     "endpoint '" + endpoint + "' has "
                       + (message_type.empty() ? std::string("several handlers")
                                               : "no handler for '" + message_type + "'")
                       + " (it handles: " + join_names(handlers, name_of) + ")"};
    }
    return ::bus::explain(*config, exception);
  }

  // The recoverability policy of each of `endpoint`'s handlers, as the
  // page describes it (bus/policy/json.hpp): message type and policy.
  result<std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>>>
  policies(const std::string& endpoint) const {
    std::lock_guard<std::mutex> guard(mutex);
    auto it = endpoints.find(endpoint);
    if (it == endpoints.end() || it->second.removed)
      return error{errc::invalid_configuration, "no endpoint '" + endpoint + "'"};
    std::vector<std::pair<std::string, std::shared_ptr<const recoverability_config>>> out;
    for (const auto& h : it->second.definition.handlers)
      out.emplace_back(registry->find(h.cpp_type)->name, h.recoverability);
    return out;
  }

  // What `endpoint`'s handlers threw lately (the page explains those).
  result<std::vector<detail::recent_exceptions::entry>> recent_exceptions(
    const std::string& endpoint) const {
    std::lock_guard<std::mutex> guard(mutex);
    auto it = endpoints.find(endpoint);
    if (it == endpoints.end() || it->second.removed)
      return error{errc::invalid_configuration, "no endpoint '" + endpoint + "'"};
    return it->second.status->exceptions.all();
  }

  // Declares the endpoint's queues and subscriptions, spawns its actor and
  // consumes. Its deliveries wait in the actor until commit(); a launch that
  // fails leaves nothing consuming and its actor stopping.
  result<launched> launch(const endpoint_entry& e) {
    auto& t = *transport;
    const auto& def = e.definition;
    // Every queue of the endpoint tells the transport the endpoint's error
    // queue, so a broker dead-letters there whatever it is named: the
    // endpoint's definition is the one place that knows it.
    queue_options endpoint_queue;
    endpoint_queue.dead_letter_queue = def.error_queue;
    for (const auto* queue : {&def.name, &def.error_queue, &def.skipped_queue})
      if (auto ok = t.declare_queue_with(*queue, endpoint_queue); !ok)
        return ok.error();
    for (const auto& slot : def.handlers)
      if (auto ok = t.subscribe(def.name, registry->find(slot.cpp_type)->name); !ok)
        return ok.error();
    // What MassTransit publishers send goes to an exchange per type; of
    // the types it handles only: the others name what it sends.
    auto handles = [&](const std::string& registered) {
      for (const auto& slot : def.handlers)
        if (auto type = registry->find(slot.cpp_type); type && type->name == registered)
          return true;
      return false;
    };
    if (def.masstransit)
      for (const auto& [urn, registered] : def.masstransit->urns())
        if (handles(registered))
          if (auto ok = t.subscribe(def.name, masstransit::exchange_of(urn)); !ok)
            return ok.error();
    // NServiceBus sends to an exchange named after the endpoint, and
    // publishes to one per type: of the types it handles only.
    if (def.nservicebus) {
      if (auto ok = t.subscribe(def.name, def.name); !ok)
        return ok.error();
      for (const auto& [type, registered] : def.nservicebus->types())
        if (handles(registered))
          if (auto ok = t.subscribe(def.name, nservicebus::exchange_of(type)); !ok)
            return ok.error();
    }
    log_policies(def);
    auto run = std::make_shared<detail::endpoint_run>();
    auto budget = detail::budget_for(def, options, budgets);
    detail::endpoint_runtime::settings settings{limits,
                                                servicecontrol_headers,
                                                jitter_seed,
                                                observer,
                                                dead_letter_directory,
                                                deterministic,
                                                spans,
                                                gates,
                                                budget,
                                                send_later()};
    auto rt = std::make_shared<const detail::endpoint_runtime>(def, registry, transport, log, clock,
                                                               e.status, run, std::move(settings));
    auto actor = system->spawn(detail::endpoint_actor, std::move(rt));
    auto consuming = t.consume(def.name, def.slots, [actor](delivery d) {
      caf::anon_send(actor, detail::deliver_atom::value, std::move(d));
    });
    if (!consuming) {
      // The endpoint stops its consumers, scheduler and breaker, as in any
      // stop; the definition stays, so a later start can try again.
      stop_endpoint(*run, actor);
      return consuming.error();
    }
    return launched{std::move(run), std::move(actor), std::move(budget)};
  }

  // The start succeeded: the launch becomes the endpoint's run, and its
  // deliveries go to its consumers.
  static void commit(endpoint_entry& e, launched l) {
    caf::anon_send(l.actor, detail::go_atom::value);
    e.run = std::move(l.run);
    e.actor = std::move(l.actor);
    e.budget = std::move(l.budget);
  }

  // The start failed elsewhere: the launch stops consuming now, before a
  // retry can consume the same queue, and its actor gives back what it
  // took, unhandled. The entry keeps its last run: a retry may go at once.
  void abandon(const endpoint_entry& e, const launched& l) const {
    transport->cancel(e.definition.name);
    stop_endpoint(*l.run, l.actor);
  }

  // How a handler's deferred message is handed to the scheduled sends.
  detail::send_later_function send_later() const {
    return [later = later](const std::string& queue, envelope msg, duration delay,
                           completion done) {
      later->send_later(queue, std::move(msg), delay, std::move(done));
    };
  }

  static void stop_endpoint(detail::endpoint_run& run, const caf::actor& actor) {
    run.stop_requested.store(true);
    caf::anon_send(actor, detail::stop_atom::value);
  }

  // The effective policy of every handler, once, so an operator can see
  // what a failure will lead to before the first one happens.
  void log_policies(const endpoint_definition& def) const {
    for (const auto& slot : def.handlers) {
      nlohmann::json description = *slot.recoverability;
      log.endpoint->info("endpoint '{}' handles '{}' with the policy {}", def.name,
                         registry->find(slot.cpp_type)->name, description.dump());
    }
  }
};

// -- bus_builder --------------------------------------------------------------

bus_builder::bus_builder(caf::actor_system& system)
  : system_(&system), registry_(std::make_shared<message_registry>()) {}
bus_builder::~bus_builder() = default;
bus_builder::bus_builder(bus_builder&&) noexcept = default;
bus_builder& bus_builder::operator=(bus_builder&&) noexcept = default;

bus_builder& bus_builder::name(std::string name) {
  name_ = std::move(name);
  return *this;
}

bus_builder& bus_builder::reply_queue(std::string queue) {
  if (queue.empty())
    mistakes_.push_back("reply_queue() needs a queue name; leave it out for one of the bus's own");
  reply_queue_ = std::move(queue);
  return *this;
}

bus_builder& bus_builder::transport(transport_ptr transport) {
  transport_ = std::move(transport);
  return *this;
}

bus_builder& bus_builder::endpoint(std::string name,
                                   const std::function<void(endpoint_builder&)>& configure) {
  endpoint_builder e(std::move(name));
  if (configure)
    configure(e);
  endpoints_.push_back(std::move(e).definition());
  return *this;
}

bus_builder& bus_builder::add_resilience() {
  scopes_.add_resilience(scope_level::bus);
  return *this;
}

bus_builder& bus_builder::add_resilience(const std::function<void(policy_builder&)>& configure) {
  scopes_.add_resilience(scope_level::bus, configure);
  return *this;
}

bus_builder& bus_builder::add_host_resilience(
  const std::function<void(policy_builder&)>& configure) {
  scopes_.add_resilience(scope_level::host, configure);
  return *this;
}

bus_builder& bus_builder::add_transport_resilience(
  const std::function<void(policy_builder&)>& configure) {
  scopes_.add_resilience(scope_level::transport, configure);
  return *this;
}

bus_builder& bus_builder::max_retry_time(duration limit) {
  options_.max_retry_time = limit;
  return *this;
}

bus_builder& bus_builder::retry_budget(retry_budget_settings settings) {
  options_.retry_budget = std::move(settings);
  return *this;
}

bus_builder& bus_builder::expired_messages(expired_action action) {
  options_.expired_messages = action;
  return *this;
}

bus_builder& bus_builder::recoverability_policy(custom_policy policy) {
  options_.custom = std::move(policy);
  return *this;
}

bus_builder& bus_builder::fault_text_limit(std::size_t bytes) {
  fault_limits_.max_message_bytes = bytes;
  return *this;
}

bus_builder& bus_builder::servicecontrol_error_headers(bool on) {
  servicecontrol_headers_ = on;
  return *this;
}

bus_builder& bus_builder::jitter_seed(std::uint64_t seed) {
  jitter_seed_ = seed;
  return *this;
}

bus_builder& bus_builder::dead_letter_directory(std::string directory) {
  dead_letter_directory_ = std::move(directory);
  return *this;
}

bus_builder& bus_builder::observe(event_observer observer) {
  if (!observer)
    return *this;
  if (!observer_) {
    observer_ = std::move(observer);
    return *this;
  }
  // Chained, so that a test harness's recorder and the user's own observer
  // both see every event.
  observer_ = [first = std::move(observer_), second = std::move(observer)](const bus_event& e) {
    try {
      first(e);
    } catch (...) {
      // An observer's failure must not hide the event from the next one.
    }
    second(e);
  };
  return *this;
}

bus_builder& bus_builder::observe_spans(span_observer observer) {
  if (!observer)
    return *this;
  if (!span_observer_) {
    span_observer_ = std::move(observer);
    return *this;
  }
  span_observer_ = [first = std::move(span_observer_),
                    second = std::move(observer)](const attempt_span& s) {
    try {
      first(s);
    } catch (...) {
      // One observer's failure must not hide the span from the next one.
    }
    second(s);
  };
  return *this;
}

bus_builder& bus_builder::dependency(std::string name, dependency_breaker_settings settings) {
  dependencies_[std::move(name)] = settings;
  return *this;
}

bus_builder& bus_builder::metrics(std::string address) {
  metrics_address_ = std::move(address);
  return *this;
}

bus_builder& bus_builder::dashboard_token(std::string token) {
  dashboard_token_ = std::move(token);
  return *this;
}

std::string bus_builder::dashboard_token() const {
  if (dashboard_token_)
    return *dashboard_token_;
  const char* from_environment = std::getenv("BUS_DASHBOARD_TOKEN");
  return from_environment ? from_environment : "";
}

bus_builder& bus_builder::metrics_registry(std::shared_ptr<prometheus::Registry> registry,
                                           duration refresh) {
  if (!registry)
    mistakes_.push_back("metrics_registry() needs a registry, not null");
  if (refresh <= duration::zero())
    mistakes_.push_back("metrics_registry() needs a refresh period above zero");
  metrics_registry_ = std::move(registry);
  metrics_refresh_ = refresh;
  return *this;
}

bus_builder& bus_builder::log_sinks(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks) {
  sinks_ = std::move(sinks);
  return *this;
}

bus_builder& bus_builder::json_logs(bool on) {
  json_logs_ = on;
  return *this;
}

bus_builder& bus_builder::remember(result<void> step) {
  if (!step)
    mistakes_.push_back(step.error().message);
  return *this;
}

result<std::unique_ptr<message_bus>> bus_builder::build() {
  auto mistakes = mistakes_;
  if (!transport_)
    mistakes.push_back("the bus has no transport (call transport(...))");
  bool json_logs = false;
  if (auto mistake = detail::choose_log_format(json_logs_, json_logs); !mistake.empty())
    mistakes.push_back(std::move(mistake));
  std::set<std::string> names;
  for (auto& def : endpoints_) {
    detail::complete(def);
    if (!names.insert(def.name).second)
      mistakes.push_back("endpoint '" + def.name + "' is defined twice");
    for (auto& m : detail::mistakes_in(def, *registry_))
      mistakes.push_back(std::move(m));
    for (auto& m : detail::resolve_recoverability(def, scopes_, options_, *registry_))
      mistakes.push_back(std::move(m));
    for (auto& m : detail::resolve_dependencies(def, dependencies_))
      mistakes.push_back(std::move(m));
  }
  for (auto& m : detail::dependency_setting_mistakes(dependencies_))
    mistakes.push_back(std::move(m));
  detail::shared_budgets budgets;
  for (auto& m : detail::make_shared_budgets(endpoints_, options_, budgets))
    mistakes.push_back(std::move(m));
  if (!mistakes.empty())
    return error{errc::invalid_configuration, join_lines(mistakes)};
  auto state = std::make_unique<message_bus::impl>();
  state->budgets = std::move(budgets);
  state->system = system_;
  state->registry = registry_;
  state->transport = transport_;
  state->name = name_;
  state->own_reply_queue = reply_queue_.empty();
  state->reply_queue = reply_queue_.empty() ? own_reply_queue(name_) : reply_queue_;
  state->log = detail::loggers::make(sinks_, json_logs, fault_limits_.max_message_bytes);
  state->clock = clock_of(*system_);
  state->scopes = scopes_;
  state->options = options_;
  state->limits = fault_limits_;
  state->servicecontrol_headers = servicecontrol_headers_;
  state->jitter_seed = jitter_seed_;
  state->observer = observer_;
  state->spans = span_observer_;
  state->dead_letter_directory = dead_letter_directory_;
  state->dependencies = dependencies_;
  state->gates = detail::make_gates(dependencies_);
  state->deterministic =
    dynamic_cast<caf::scheduler::test_coordinator*>(&system_->scheduler()) != nullptr;
  state->later = std::make_shared<detail::scheduled_sends>(*system_, transport_, state->log,
                                                           dead_letter_directory_);
  if (metrics_address_ || metrics_registry_)
    state->sends = std::make_shared<detail::metrics::send_instruments>();
  for (auto& def : endpoints_) {
    auto key = def.name;
    state->endpoints[key].definition = std::move(def);
    state->equip(state->endpoints[key]);
  }
  endpoints_.clear();
  if (state->sends) {
    auto* raw = state.get();
    detail::dashboard::dashboard::sources page_sources{
      [raw] { return raw->dashboard_view(); }, transport_->error_queues(), dashboard_token(),
      [raw](const std::string& endpoint) { return raw->recent_exceptions(endpoint); },
      [raw](const std::string& endpoint) { return raw->policies(endpoint); },
      [raw](const std::string& endpoint, const std::string& message_type,
            const std::exception_ptr& e) { return raw->explain(endpoint, message_type, e); }};
    auto page = std::make_shared<const detail::dashboard::dashboard>(std::move(page_sources));
    auto metrics = detail::metrics::service::start(
      {metrics_address_, metrics_registry_, metrics_refresh_,
       [page](const detail::metrics::http_request& r) { return page->answer(r); }},
      [raw] { return raw->view(); }, state->sends);
    if (!metrics)
      return metrics.error();
    state->metrics = std::move(*metrics);
  }
  return std::unique_ptr<message_bus>(new message_bus(std::move(state)));
}

// -- message_bus ----------------------------------------------------------------------

message_bus::message_bus(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

message_bus::~message_bus() {
  // Never block here (a bus on the test coordinator would hang): ask the
  // endpoints to drain; the actor system waits for them.
  request_stop();
}

result<void> message_bus::start() {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::vector<impl::endpoint_entry*> to_launch;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (impl_->state == impl::phase::running)
      return error{errc::invalid_configuration, "the bus is already started"};
    for (auto& [name, e] : impl_->endpoints) {
      if (e.active())
        return error{errc::not_running, "endpoint '" + name
                                          + "' is still stopping; start again once stop() returned"};
      if (!e.removed)
        to_launch.push_back(&e);
    }
  }
  // All or nothing: if one endpoint cannot start, those launched before it
  // stop again without handling anything, and a later start() can try
  // them all anew. The broker round trips happen outside `mutex`; the
  // entries stay, as only this turn's holder could erase them.
  std::vector<std::pair<impl::endpoint_entry*, impl::launched>> started;
  for (auto* e : to_launch) {
    auto launched = impl_->launch(*e);
    if (!launched) {
      for (const auto& [done, l] : started)
        impl_->abandon(*done, l);
      return error{launched.error().code, "cannot start endpoint '" + e->definition.name
                                              + "': " + launched.error().message};
    }
    started.emplace_back(e, std::move(*launched));
  }
  std::lock_guard<std::mutex> guard(impl_->mutex);
  for (auto& [e, l] : started)
    impl::commit(*e, std::move(l));
  impl_->state = impl::phase::running;
  return {};
}

void message_bus::request_stop() {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::lock_guard<std::mutex> guard(impl_->mutex);
  if (impl_->state == impl::phase::running)
    impl_->state = impl::phase::stopped;
  for (auto& [name, e] : impl_->endpoints)
    if (e.active())
      impl::stop_endpoint(*e.run, e.actor);
}

void message_bus::stop() {
  request_stop();
  std::vector<caf::actor> actors;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    for (auto& [name, e] : impl_->endpoints)
      if (e.actor)
        actors.push_back(e.actor);
  }
  caf::scoped_actor self{*impl_->system};
  for (auto& a : actors)
    self->monitor(a);
  for (std::size_t i = 0; i < actors.size(); ++i)
    self->receive([](const caf::down_msg&) {});
}

bool message_bus::running() const noexcept { return impl_->state == impl::phase::running; }

bool message_bus::stopped() const noexcept {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  for (const auto& [name, e] : impl_->endpoints)
    if (e.active())
      return false;
  return impl_->state != impl::phase::running;
}

result<void> message_bus::add_endpoint(endpoint_builder endpoint) {
  auto def = std::move(endpoint).definition();
  detail::complete(def);
  auto mistakes = detail::mistakes_in(def, *impl_->registry);
  for (auto& m :
       detail::resolve_recoverability(def, impl_->scopes, impl_->options, *impl_->registry))
    mistakes.push_back(std::move(m));
  for (auto& m : detail::resolve_dependencies(def, impl_->dependencies))
    mistakes.push_back(std::move(m));
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  impl::endpoint_entry* added = nullptr;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (auto it = impl_->endpoints.find(def.name);
        it != impl_->endpoints.end() && !(it->second.actor && !it->second.active()))
      mistakes.push_back("endpoint '" + def.name + "' exists already");
    if (!mistakes.empty())
      return error{errc::invalid_configuration, join_lines(mistakes)};
    auto name = def.name;
    added = &(impl_->endpoints[name] = impl::endpoint_entry{});
    added->definition = std::move(def);
    impl_->equip(*added);
  }
  if (impl_->state != impl::phase::running)
    return {};
  // The broker round trips happen outside `mutex`, as in start().
  auto launched = impl_->launch(*added);
  if (!launched)
    return launched.error();
  std::lock_guard<std::mutex> guard(impl_->mutex);
  impl::commit(*added, std::move(*launched));
  return {};
}

result<void> message_bus::remove_endpoint(const std::string& name) {
  std::lock_guard<std::mutex> turn(impl_->lifecycle);
  std::lock_guard<std::mutex> guard(impl_->mutex);
  auto it = impl_->endpoints.find(name);
  if (it == impl_->endpoints.end())
    return error{errc::invalid_configuration, "there is no endpoint '" + name + "'"};
  if (it->second.active()) {
    it->second.removed = true;
    impl::stop_endpoint(*it->second.run, it->second.actor);
  } else {
    impl_->endpoints.erase(it);
  }
  return {};
}

std::optional<endpoint_stats> message_bus::stats(const std::string& endpoint) const {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  auto it = impl_->endpoints.find(endpoint);
  if (it == impl_->endpoints.end())
    return std::nullopt;
  return it->second.status->counters.snapshot();
}

std::vector<std::string> message_bus::endpoint_names() const {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [name, e] : impl_->endpoints)
    out.push_back(name);
  return out;
}

result<explanation> message_bus::explain(const std::string& endpoint,
                                         const std::string& message_type,
                                         const std::exception_ptr& exception) const {
  return impl_->explain(endpoint, message_type, exception);
}

const message_registry& message_bus::registry() const noexcept { return *impl_->registry; }

const std::string& message_bus::reply_queue() const noexcept { return impl_->reply_queue; }

bool message_bus::wait_for(const std::function<bool()>& ready) {
  if (!impl_->deterministic)
    return true;
  // Virtual time moves only when this thread moves it: run what is due,
  // then fire the next timer, one due time at a time, as the harness does.
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(impl_->system->scheduler());
  sched.run();
  while (!ready()) {
    auto& clock = sched.clock();
    const auto& schedule = clock.schedule();
    if (schedule.empty())
      return false;
    auto next = schedule.begin()->first;
    clock.advance_time(next > clock.now() ? next - clock.now()
                                          : caf::actor_clock::duration_type{0});
    sched.run();
  }
  return true;
}

transport& message_bus::transport() const noexcept { return *impl_->transport; }

health_report message_bus::health() const {
  return impl_->metrics ? impl_->metrics->health() : detail::metrics::assess(impl_->view());
}

std::string message_bus::metrics_address() const {
  return impl_->metrics ? impl_->metrics->address() : std::string();
}

time_point message_bus::now() const { return impl_->clock(); }

void message_bus::warn_outbox(const std::string& line) const { impl_->log.outbox->warn("{}", line); }

result<::bus::outbox_session> message_bus::outbox_session(std::shared_ptr<message_store> store) {
  std::string endpoint;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    for (const auto& [name, e] : impl_->endpoints)
      if (!e.removed && store && e.definition.store == store) {
        endpoint = name;
        break;
      }
  }
  if (endpoint.empty())
    return error{errc::invalid_configuration,
                 "an outbox session needs the store of an endpoint's outbox, whose sweeper sends "
                 "what a crash leaves unsent; no endpoint of this bus has this one"};
  // The session's record is filed under that endpoint, with an id of its own.
  inbox_key key{endpoint, detail::new_message_id()};
  auto entry = store->receive(key, now());
  if (!entry)
    return entry.error();
  if (entry->state != inbox_state::first) // a fresh id: only a broken store says otherwise
    return error{errc::store_failure, "the store knows the fresh session id " + key.message_id};
  return ::bus::outbox_session(*this, std::move(store), std::move(key),
                               std::move(entry->transaction));
}

result<envelope> message_bus::stamp(const std::string& queue, result<message_body> body,
                                    send_options options) {
  if (impl_->state == impl::phase::stopped)
    return error{errc::not_running, "the bus is stopped; start() it again to send"};
  if (!body)
    return body.error();
  auto env = detail::stamp_outgoing(std::move(*body), impl_->name, impl_->clock(), queue,
                                    std::move(options), nullptr);
  detail::start_trace(env); // a valid traceparent of the caller's is kept
  return env;
}

result<std::string> message_bus::dispatch(const std::string& queue, result<message_body> body,
                                          send_options options) {
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env)
    return env.error();
  auto id = env->message_id;
  // Timed from the stamp's own clock read (bus-sent-at), with metrics on.
  auto started = env->sent_at;
  auto sent = queue.empty() ? impl_->transport->publish(std::move(*env))
                            : impl_->transport->send(queue, std::move(*env));
  if (impl_->sends)
    (queue.empty() ? impl_->sends->publish : impl_->sends->send).observe(impl_->clock() - started);
  if (!sent)
    return sent.error();
  return id;
}

void message_bus::dispatch_async(const std::string& queue, result<message_body> body,
                                 send_options options, send_completion done) {
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env) {
    done(env.error());
    return;
  }
  // The transport answers success or failure; the caller gets the id, so a
  // confirmed send can be matched to a log line or a reply.
  completion answered = [id = env->message_id, done = std::move(done)](result<void> r) {
    if (r)
      done(id);
    else
      done(r.error());
  };
  if (impl_->sends) {
    // Timed until the transport answers; the instruments outlive the call.
    auto* histogram = queue.empty() ? &impl_->sends->publish : &impl_->sends->send;
    // On the steady clock: the answer may come after the bus (and the
    // actor system behind its clock) is gone.
    answered = [sends = impl_->sends, histogram, started = std::chrono::steady_clock::now(),
                answered = std::move(answered)](result<void> r) {
      histogram->observe(std::chrono::steady_clock::now() - started);
      answered(std::move(r));
    };
  }
  if (queue.empty())
    impl_->transport->async_publish(std::move(*env), std::move(answered));
  else
    impl_->transport->async_send(queue, std::move(*env), std::move(answered));
}

result<std::string> message_bus::dispatch_later(const std::string& queue,
                                                result<message_body> body, send_options options,
                                                duration delay) {
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env)
    return env.error();
  auto id = env->message_id;
  // Called inline in memory, on the broker's I/O thread otherwise: this
  // caller is outside the actors, so it may wait.
  std::promise<result<void>> held;
  auto future = held.get_future();
  impl_->later->send_later(queue, std::move(*env), delay,
                           [&held](result<void> r) { held.set_value(std::move(r)); });
  if (auto r = future.get(); !r)
    return r.error();
  return id;
}

void message_bus::dispatch_request(const std::string& queue, result<message_body> body,
                                   send_options options, duration timeout,
                                   std::function<void(result<envelope_ptr>)> done) {
  auto client = impl_->request_client();
  options.response_address = client->address();
  auto env = stamp(queue, std::move(body), std::move(options));
  if (!env) {
    done(env.error());
    return;
  }
  if (env->correlation_id.empty())
    env->correlation_id = env->message_id;
  // The first request waits for the reply queue off the caller's thread;
  // what follows needs nothing of this bus but its transport, which may be
  // gone by then.
  client->when_ready([client, transport = impl_->transport, queue, timeout,
                      env = std::move(*env),
                      done = std::move(done)](result<void> ready) mutable {
    if (!ready) {
      done(ready.error());
      return;
    }
    auto correlation_id = env.correlation_id;
    // Sent by the client once the wait is registered: its reply cannot
    // come first, and a request it refuses never goes out. The completion
    // holds no owner (a client gone answered its waits already), so that
    // no last reference is dropped on the transport's thread.
    std::weak_ptr<detail::request_client> waiting_client = client;
    detail::request_sender sender{[waiting_client, transport, queue, correlation_id,
                                   env = std::make_shared<envelope>(std::move(env))] {
      transport->async_send(queue, std::move(*env),
                            [waiting_client, correlation_id](result<void> sent) {
                              if (auto c = waiting_client.lock(); c && !sent)
                                c->abandon(correlation_id, sent.error());
                            });
    }};
    client->expect(correlation_id, timeout, std::move(done), std::move(sender));
  });
}

std::string message_bus::describe_failure(const std::string& message_id,
                                          const std::string& endpoint, const std::string& reason,
                                          const std::string& exception_type,
                                          const std::string& exception_message) {
  return "request " + message_id + " failed in endpoint '" + endpoint + "' (" + reason
         + "): " + exception_type + ": " + exception_message;
}

duration message_bus::until(time_point when) const {
  auto left = std::chrono::duration_cast<duration>(when - impl_->clock());
  return std::max(left, duration::zero());
}

std::shared_ptr<const message_registry> message_bus::shared_registry() const {
  return impl_->registry;
}

} // namespace bus
