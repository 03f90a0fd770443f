// The bus facade: build a bus inside your own caf::actor_system, start it,
// send and publish from anywhere, add and remove endpoints while it runs,
// read each endpoint's counters, and stop it cleanly.
//
//   bus::bus_builder b{sys};
//   b.message<order_placed>("order_placed")
//    .transport(std::make_shared<bus::in_memory_transport>())
//    .endpoint("billing", [](bus::endpoint_builder& e) {
//      e.slots(4).handle<order_placed>([](const order_placed& m) { ... });
//    });
//   auto bus = b.build();         // result<unique_ptr<message_bus>>          // refuses a bad configuration, naming every mistake
//   bus.value()->start();
//   bus.value()->publish(order_placed{"o-1", 42.0});
//   bus.value()->stop();           // drains work in flight, leaves no actor behind
//
// Threads: each endpoint's handlers run on a thread per slot by default
// (bus::handler_threads), beside CAF's own workers; see the README.
#pragma once

#include <functional>
#include <map>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bus/dependency_breaker.hpp"
#include "bus/endpoint_builder.hpp"
#include "bus/endpoint_counters.hpp"
#include "bus/error.hpp"
#include "bus/events.hpp"
#include "bus/fault.hpp"
#include "bus/health.hpp"
#include "bus/headers.hpp"
#include "bus/http_listener.hpp"
#include "bus/message_registry.hpp"
#include "bus/outbox_session.hpp"
#include "bus/policy/explain.hpp"
#include "bus/spans.hpp"
#include "bus/send_options.hpp"
#include "bus/transport.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace spdlog::sinks {
class sink;
} // namespace spdlog::sinks

namespace prometheus {
class Registry;
} // namespace prometheus

namespace bus {

// send_options (the optional fields of a send) is in bus/send_options.hpp,
// shared with the handler context.

// How an asynchronous send or publish of the facade ended: the id of the
// message sent (what send() returns), or why it was not.
using send_completion = std::function<void(result<std::string>)>;

class message_bus;

class bus_builder {
public:
  explicit bus_builder(caf::actor_system& system);
  ~bus_builder();
  bus_builder(bus_builder&&) noexcept;
  bus_builder& operator=(bus_builder&&) noexcept;

  // The address messages sent from outside a handler carry as their source.
  bus_builder& name(std::string name);

  // The queue replies to this bus's requests come back on. By default each
  // bus gets its own, `<name>_replies_<host>_<process id>_<n>`, so that two
  // processes (or two buses of one) with the same name never take each
  // other's replies; on a broker it is deleted once unused for a while.
  // A fixed name is for those who want one: it must then be unique to
  // this bus, and on a broker it is an ordinary durable queue.
  bus_builder& reply_queue(std::string queue);

  // Registers T as a message under `wire_name` (see message_registry).
  template <class T>
  bus_builder& message(std::string wire_name) {
    return remember(registry_->add<T>(std::move(wire_name)));
  }

  bus_builder& transport(transport_ptr transport);

  // Routing by type: sends of T that name no queue (bus.send(msg),
  // ctx.send(msg), send_after, request) go to `queue`. Register T first.
  template <class T>
  bus_builder& route(std::string queue) {
    return remember(registry_->route<T>(std::move(queue)));
  }

  // Adds an endpoint; `configure` fills in its slots and handlers.
  bus_builder& endpoint(std::string name, const std::function<void(endpoint_builder&)>& configure);

  // Adds an endpoint named `name` that reads the stream `stream` (issue
  // 27): declared by the transport, read from the endpoint's own offset,
  // e.start_from() the first time. A failed message may be neither retried
  // nor redelivered (every reader of the stream would read another copy):
  // a rule that asks for either refuses the build, naming the rule; a
  // failure goes to the endpoint's error queue, or is discarded, and the
  // reading goes on.
  bus_builder& stream_endpoint(std::string name, std::string stream,
                               const std::function<void(endpoint_builder&)>& configure);

  // Exception policies of the bus scope, for every endpoint that defines
  // none of its own. Without any, a failure goes to the error queue.
  // The parameterless form: on_any().retry().then_redeliver().
  bus_builder& add_resilience();
  bus_builder& add_resilience(const std::function<void(policy_builder&)>& configure);
  // The host scope (rules shared by every bus of the process: pass the same
  // function to each builder) and the transport scope. Scopes replace each
  // other whole: consumer > endpoint > transport > bus > host.
  bus_builder& add_host_resilience(const std::function<void(policy_builder&)>& configure);
  bus_builder& add_transport_resilience(const std::function<void(policy_builder&)>& configure);

  // E and its subtypes go to the error queue on their first failure, on
  // every endpoint.
  template <class E>
  bus_builder& unrecoverable() {
    options_.unrecoverable.add<E>();
    return *this;
  }
  // Retrying stops this long after a message first failed (24 h by default).
  bus_builder& max_retry_time(duration limit);
  // A retry budget for every endpoint without its own (each endpoint its
  // own budget, or one shared by every endpoint if `settings.name` is set);
  // see endpoint_builder::retry_budget.
  bus_builder& retry_budget(retry_budget_settings settings = {});
  // What becomes of an expired message on every endpoint without its own
  // choice (discard by default).
  bus_builder& expired_messages(expired_action action);
  // Replaces the decision for every endpoint without its own.
  bus_builder& recoverability_policy(custom_policy policy);
  // Fault texts (exception message, reason) are cut to this many bytes.
  bus_builder& fault_text_limit(std::size_t bytes);
  // Error-queue copies also carry the headers NServiceBus's ServiceControl
  // reads (NServiceBus.FailedQ, .ExceptionInfo.*, .TimeOfFailure,
  // .ProcessingEndpoint, the retry counters; bus/servicecontrol.hpp), so
  // that a company's ServicePulse lists this bus's failures and retries
  // them. Off by default. A retry from ServicePulse starts over whatever
  // this says.
  bus_builder& servicecontrol_error_headers(bool on = true);
  // Where a failed message goes when its error queue refuses it even with
  // minimal fault headers: <directory>/<endpoint>.dead-letters.jsonl.
  // Default: ./bus-dead-letters.
  bus_builder& dead_letter_directory(std::string directory);
  // Where stream endpoints keep their offsets (issue 27): one file per
  // endpoint and stream, <directory>/<stream>.<endpoint>.offset, written
  // each time the endpoint's position moves; a process started again
  // resumes after it. Default: ./bus-stream-offsets.
  bus_builder& stream_offset_directory(std::string directory);
  // Seeds the generator that jitters retry delays, for reproducible runs;
  // by default each consumer seeds from the operating system.
  bus_builder& jitter_seed(std::uint64_t seed);

  // Declares a dependency breaker, shared by every endpoint that depends on
  // it (endpoint_builder::depends_on, or a rule's trips("name")). A name
  // used but not declared is a configuration mistake. See docs/policies.md.
  bus_builder& dependency(std::string name, dependency_breaker_settings settings = {});

  // Receives an event for every step of every message (see bus/events.hpp).
  // Each call adds an observer; all are called, in the order added, and
  // one that throws does not keep the others from the event.
  bus_builder& observe(event_observer observer);

  // Receives one span per attempt to handle a message, with its trace ids,
  // outcome and times (see bus/spans.hpp): the hook to bridge the bus's W3C
  // trace context to OpenTelemetry or another tracer. Each call adds an
  // observer; all are called, in the order added.
  bus_builder& observe_spans(span_observer observer);

  // Where the bus's loggers (bus.endpoint, bus.move_to_error, ...) write.
  // Default: standard error. The bus never touches spdlog's global registry.
  bus_builder& log_sinks(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks);
  // Writes the bus's log lines as JSON, one object per line (time, level,
  // logger, text, and where the line has them message_id, endpoint,
  // attempt, exception_type, reason), replacing the sinks' pattern. The
  // environment variable BUS_LOG_FORMAT=json|text, when set, decides
  // instead; any other value is a configuration mistake.
  bus_builder& json_logs(bool on = true);

  // Metrics (docs/metrics.md) and health, off by default. metrics() serves
  // /metrics, /health/live and /health/ready over HTTP at `address`
  // ("host:port"; port 0 picks a free one, see message_bus::metrics_address);
  // build() fails if it cannot listen there. metrics_registry() adds the
  // bus's families to the user's registry instead, for their own exposer;
  // it syncs them every `refresh` (values lag the bus by at most that).
  // Both may be given: the bus then serves the user's registry too.
  // `listener`: how many connections it serves at once, and how long one
  // may keep a thread without sending its request (docs/metrics.md, "The
  // listener's deadlines").
  bus_builder& metrics(std::string address, http_listener_settings listener = {});
  bus_builder& metrics_registry(std::shared_ptr<prometheus::Registry> registry,
                                duration refresh = std::chrono::seconds(1));

  // The bus's page (README, "The bus's page") is served at / of the
  // metrics address, read-only. With a token, it may also replay and
  // delete failed messages: each such request is a POST carrying
  // "Authorization: Bearer <token>". Without this call, the environment
  // variable BUS_DASHBOARD_TOKEN gives the token, if set and not empty.
  bus_builder& dashboard_token(std::string token);

  // Checks the whole configuration and reports every mistake at once, in
  // one errc::invalid_configuration error, one line per mistake.
  [[nodiscard]] result<std::unique_ptr<message_bus>> build();

private:
  bus_builder& remember(result<void> step);
  [[nodiscard]] std::string dashboard_token() const; // the builder's, else the environment's

  caf::actor_system* system_;
  std::shared_ptr<message_registry> registry_;
  transport_ptr transport_;
  std::string name_ = "bus";
  std::string reply_queue_; // empty: one of this bus's own
  std::vector<endpoint_definition> endpoints_;
  std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks_;
  bool json_logs_ = false;
  std::vector<std::string> mistakes_;
  recoverability_scopes scopes_; // host, bus and transport
  recoverability_options options_;
  fault_limits fault_limits_;
  bool servicecontrol_headers_ = false;
  std::optional<std::uint64_t> jitter_seed_;
  event_observer observer_;
  span_observer span_observer_;
  std::string dead_letter_directory_ = "bus-dead-letters";
  std::string stream_offset_directory_ = "bus-stream-offsets";
  std::map<std::string, dependency_breaker_settings> dependencies_;
  std::optional<std::string> metrics_address_;
  http_listener_settings metrics_listener_;
  std::shared_ptr<prometheus::Registry> metrics_registry_;
  duration metrics_refresh_ = std::chrono::seconds(1);
  std::optional<std::string> dashboard_token_;
};

class message_bus {
public:
  ~message_bus(); // stops the bus if it still runs
  message_bus(const message_bus&) = delete;
  message_bus& operator=(const message_bus&) = delete;

  // Declares every endpoint's queues and subscriptions and spawns its actors.
  result<void> start();

  // Asks every endpoint to stop: no new deliveries, work in flight drains
  // (up to each endpoint's drain timeout; what is left is given back to the
  // transport and logged). Returns at once.
  void request_stop();
  // request_stop(), then blocks until every endpoint actor has finished.
  // Not for a bus on CAF's test coordinator: there, request_stop(), run the
  // scheduler, and check stopped().
  void stop();
  [[nodiscard]] bool running() const noexcept;
  [[nodiscard]] bool stopped() const noexcept;

  // Adds an endpoint to a running bus (or one not started yet), validated as
  // build() validates.
  result<void> add_endpoint(endpoint_builder endpoint);
  // Stops one endpoint, draining its work as request_stop() does.
  result<void> remove_endpoint(const std::string& name);

  // Sends `msg` to `queue` and returns once the transport has it (on a
  // broker: once the broker confirmed it), with the id of the message sent
  // (options.message_id if set). errc::not_running once the bus stopped.
  // Thread-safe; for callers outside actors (an actor uses the
  // non-blocking form, or a handler's context).
  template <class T>
  result<std::string> send(const std::string& queue, T msg, send_options options = {}) {
    return dispatch(queue, registry().make_body(std::move(msg)), std::move(options));
  }

  // Sends `msg` to the queue T is routed to (bus_builder::route<T>);
  // errc::invalid_configuration, naming the type, if it has no route.
  template <class T>
  result<std::string> send(T msg, send_options options = {}) {
    auto queue = registry().route_of<T>();
    if (!queue)
      return queue.error();
    return send(*queue, std::move(msg), std::move(options));
  }

  template <class T>
  result<std::string> publish(T msg, send_options options = {}) {
    return dispatch({}, registry().make_body(std::move(msg)), std::move(options));
  }

  // Scheduled sends: `msg` reaches `queue` once `delay` has passed (or at
  // `when`, by the bus's clock: virtual time on CAF's test coordinator).
  // Held as redeliveries are: on a broker with delayed delivery (RabbitMQ's
  // delay levels) from the moment this returns, so it survives a restart
  // of this process; in memory by the bus's scheduler, lost with the bus.
  // Returns the message id. Blocking like send(); thread-safe.
  template <class T>
  result<std::string> send_after(duration delay, const std::string& queue, T msg,
                                 send_options options = {}) {
    return dispatch_later(queue, registry().make_body(std::move(msg)), std::move(options), delay);
  }
  template <class T>
  result<std::string> send_after(duration delay, T msg, send_options options = {}) {
    auto queue = registry().route_of<T>();
    if (!queue)
      return queue.error();
    return send_after(delay, *queue, std::move(msg), std::move(options));
  }
  template <class T>
  result<std::string> send_at(time_point when, const std::string& queue, T msg,
                              send_options options = {}) {
    return send_after(until(when), queue, std::move(msg), std::move(options));
  }
  template <class T>
  result<std::string> send_at(time_point when, T msg, send_options options = {}) {
    return send_after(until(when), std::move(msg), std::move(options));
  }

  // Request/response: sends `msg` to `queue` with this bus's reply queue
  // (reply_queue()) as its response address and its message id as its
  // correlation id (unless options set one), and waits for the handler's
  // ctx.reply(...). Returns the reply, or an error: errc::timeout if none
  // came within `timeout` (a later one is logged and dropped),
  // errc::request_failed if the request failed for good (its fault<T>
  // came back; the error names the endpoint, the exception and the
  // reason), or why it could not be sent. options.response_address is
  // replaced; a fault_address of your own sends the fault elsewhere.
  // Blocks: for callers outside actors and handlers. On CAF's test
  // coordinator (the test harness) it runs the actors and moves virtual
  // time on until the reply or the timeout, as harness::advance would.
  template <class Reply, class T>
  result<Reply> request(const std::string& queue, T msg, duration timeout,
                        send_options options = {}) {
    // Shared: a wait that gives up early (see wait_for) leaves the
    // callback something to write into.
    auto promise = std::make_shared<std::promise<result<Reply>>>();
    auto future = promise->get_future();
    request_async<Reply>(queue, std::move(msg), timeout,
                         [promise](result<Reply> r) { promise->set_value(std::move(r)); },
                         std::move(options));
    if (!wait_for([&future] {
          return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        }))
      return error{errc::timeout, "the request to '" + queue
                                    + "' can never be answered: nothing is left to run on the "
                                      "test coordinator"};
    return future.get();
  }
  template <class Reply, class T>
  result<Reply> request(T msg, duration timeout, send_options options = {}) {
    auto queue = registry().route_of<T>();
    if (!queue)
      return queue.error();
    return request<Reply>(*queue, std::move(msg), timeout, std::move(options));
  }

  // The non-blocking request, for actors and tests on virtual time: returns
  // at once and calls `done` exactly once with what request() would have
  // returned, on an actor's thread (or inline when it cannot be sent).
  // `done` must not block.
  template <class Reply, class T>
  void request_async(const std::string& queue, T msg, duration timeout,
                     std::function<void(result<Reply>)> done, send_options options = {}) {
    dispatch_request(queue, registry().make_body(std::move(msg)), std::move(options), timeout,
                     [registry = shared_registry(), done = std::move(done)](result<envelope_ptr> got) {
                       done(take_reply<Reply, T>(*registry, got));
                     });
  }

  // The non-blocking forms: they return at once and call `done` exactly
  // once with what send() or publish() would have returned (the message
  // id, or the error), on the transport's thread or inline before they
  // return. So one thread can keep a thousand confirmed sends in flight.
  // `done` must not block and must not call back into the bus's blocking
  // members. A `done` taking result<void> still compiles: it sees success
  // or failure only.
  template <class T>
  void send_async(const std::string& queue, T msg, send_completion done,
                  send_options options = {}) {
    dispatch_async(queue, registry().make_body(std::move(msg)), std::move(options), std::move(done));
  }

  template <class T>
  void publish_async(T msg, send_completion done, send_options options = {}) {
    dispatch_async({}, registry().make_body(std::move(msg)), std::move(options), std::move(done));
  }

  // A transaction of `store` for sends from outside a handler, with the
  // caller's own writes (bus/outbox_session.hpp). `store` must be the
  // outbox of an endpoint of this bus, whose sweeper sends what a crash
  // leaves unsent: errc::invalid_configuration otherwise. A store that
  // fails to open the transaction: errc::store_failure. May block.
  result<::bus::outbox_session> outbox_session(std::shared_ptr<message_store> store);

  // The counters of `endpoint`, or nothing if there is no such endpoint.
  [[nodiscard]] std::optional<endpoint_stats> stats(const std::string& endpoint) const;
  [[nodiscard]] std::vector<std::string> endpoint_names() const;
  // What the policy of `endpoint`'s handler for `message_type` (its
  // registered name; empty for an endpoint with one handler) does with
  // `exception`: explain() of the handler's configuration, its scopes
  // resolved as at build time. errc::invalid_configuration naming the
  // endpoints or message types there are, if there is no such handler.
  // Any thread; never runs a handler.
  [[nodiscard]] result<explanation> explain(const std::string& endpoint,
                                            const std::string& message_type,
                                            const std::exception_ptr& exception) const;
  [[nodiscard]] const message_registry& registry() const noexcept;
  // The queue this bus's requests get their replies on (bus_builder::reply_queue).
  [[nodiscard]] const std::string& reply_queue() const noexcept;
  [[nodiscard]] ::bus::transport& transport() const noexcept;

  // Ready when the bus runs, every endpoint consumes and the transport is
  // connected; what /health/ready answers. Any thread.
  [[nodiscard]] health_report health() const;
  // Where the bus serves metrics ("host:port" with the port bound), or
  // empty if it serves none.
  [[nodiscard]] std::string metrics_address() const;

  struct impl;

private:
  friend class bus_builder;
  friend class ::bus::outbox_session; // stamps its sends as the bus's own
  explicit message_bus(std::unique_ptr<impl> state);
  // For outbox sessions: the bus's clock, and its bus.outbox logger.
  [[nodiscard]] time_point now() const;
  void warn_outbox(const std::string& line) const;

  // The reply a request waited for, as a Reply, or the error it stands for.
  // (Static, on a shared registry: it may run after the bus is gone.)
  template <class Reply, class Request>
  static result<Reply> take_reply(const message_registry& registry,
                                  const result<envelope_ptr>& got) {
    if (!got)
      return got.error();
    const envelope& env = **got;
    auto body = registry.ensure_typed(env.message_type, env.body);
    if (!body)
      return body.error();
    if (const auto* reply = body->template get<Reply>())
      return *reply;
    if (const auto* f = body->template get<fault<Request>>())
      return error{errc::request_failed,
                   describe_failure(f->message_id, f->endpoint, f->reason, f->exception_type,
                                    f->exception_message)};
    return error{errc::unknown_message_type,
                 "the reply " + env.message_id + " is a '" + env.message_type
                   + "', not the reply type the request waits for"};
  }
  static std::string describe_failure(const std::string& message_id, const std::string& endpoint,
                                      const std::string& reason, const std::string& exception_type,
                                      const std::string& exception_message);
  [[nodiscard]] std::shared_ptr<const message_registry> shared_registry() const;
  // How long from now until `when`, by the bus's clock (zero if past).
  [[nodiscard]] duration until(time_point when) const;

  // The envelope a send from outside a handler carries, or why there is none.
  result<envelope> stamp(const std::string& queue, result<message_body> body,
                         send_options options);
  result<std::string> dispatch(const std::string& queue, result<message_body> body,
                               send_options options);
  void dispatch_async(const std::string& queue, result<message_body> body, send_options options,
                      send_completion done);
  // Returns once `ready()` holds. On real threads that is at once (the
  // caller then blocks on its own future); on CAF's test coordinator it
  // runs the actors and fires timers in order until ready() holds, and
  // returns false if nothing is left to run and it still does not.
  bool wait_for(const std::function<bool()>& ready);
  result<std::string> dispatch_later(const std::string& queue, result<message_body> body,
                                     send_options options, duration delay);
  void dispatch_request(const std::string& queue, result<message_body> body, send_options options,
                        duration timeout, std::function<void(result<envelope_ptr>)> done);

  std::unique_ptr<impl> impl_;
};

} // namespace bus
