#include "facade/bus_state.hpp"

#include <set>

#include <cstdio>

#include <unistd.h>

#include <caf/all.hpp>

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

} // namespace

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

bus_builder& bus_builder::stream_endpoint(std::string name, std::string stream,
                                          const std::function<void(endpoint_builder&)>& configure) {
  endpoint_builder e(std::move(name), std::move(stream));
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

bus_builder&
bus_builder::add_host_resilience(const std::function<void(policy_builder&)>& configure) {
  scopes_.add_resilience(scope_level::host, configure);
  return *this;
}

bus_builder&
bus_builder::add_transport_resilience(const std::function<void(policy_builder&)>& configure) {
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

bus_builder& bus_builder::stream_offset_directory(std::string directory) {
  stream_offset_directory_ = std::move(directory);
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

bus_builder& bus_builder::metrics(std::string address, http_listener_settings listener) {
  metrics_address_ = std::move(address);
  if (auto wrong = validate(listener); !wrong.empty())
    mistakes_.push_back("metrics(): " + wrong);
  metrics_listener_ = listener;
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
    return error{errc::invalid_configuration, detail::join_lines(mistakes)};
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
  state->stream_offset_directory = stream_offset_directory_;
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
        [raw] { return raw->dashboard_view(); },
        transport_->error_queues(),
        dashboard_token(),
        [raw](const std::string& endpoint) { return raw->recent_exceptions(endpoint); },
        [raw](const std::string& endpoint) { return raw->policies(endpoint); },
        [raw](const std::string& endpoint, const std::string& message_type,
              const std::exception_ptr& e) { return raw->explain(endpoint, message_type, e); }};
    auto page = std::make_shared<const detail::dashboard::dashboard>(std::move(page_sources));
    auto metrics = detail::metrics::service::start(
        {metrics_address_, metrics_listener_, metrics_registry_, metrics_refresh_,
         [page](const detail::metrics::http_request& r) { return page->answer(r); }},
        [raw] { return raw->view(); }, state->sends);
    if (!metrics)
      return metrics.error();
    state->metrics = std::move(*metrics);
  }
  return std::unique_ptr<message_bus>(new message_bus(std::move(state)));
}

} // namespace bus
