// Describes one endpoint: its queue, its concurrency slots and its
// handlers. A handler for T also subscribes the endpoint to T's publishes.
//
//   e.slots(4)
//    .handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) { ... })
//    .handle<order_cancelled>(std::make_shared<cancellation_handler>());  // has handle(const T&, ctx)
//
// A handler runs on a consumer actor, one message at a time per consumer;
// the same handler object serves every slot, so a handler with mutable
// state must synchronise it itself. By default each slot has a thread of
// its own, so a handler may block (see handler_threads).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "bus/concurrency_limit.hpp"
#include "bus/handler_context.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "bus/policy/recoverability.hpp"
#include "bus/rate_limiter.hpp"
#include "bus/stream.hpp"
#include "bus/time.hpp"
#include "bus/type_mapping.hpp"

namespace caf {
class actor;
} // namespace caf

namespace bus {

namespace detail {

// A handler served by a user's actor; defined in bus/actor_handler.hpp.
struct actor_invoker;

// One handler of an endpoint, with its message type erased. Exactly one of
// `invoke` and `via_actor` is set.
struct handler_slot {
  std::type_index cpp_type;
  std::function<void(const void* message, handler_context& ctx)> invoke;
  std::shared_ptr<const actor_invoker> via_actor;
  // Rules of the consumer scope, if this handler has its own.
  std::optional<rule_set> rules;
  // The policy that applies to this handler: its scopes resolved and
  // validated. Filled in when the bus is built.
  std::shared_ptr<const recoverability_config> recoverability;
};

template <class T, class F>
auto make_invoker(F f) {
  if constexpr (std::is_invocable_v<F&, const T&, handler_context&>) {
    return [f = std::move(f)](const void* m, handler_context& ctx) mutable {
      f(*static_cast<const T*>(m), ctx);
    };
  } else if constexpr (std::is_invocable_v<F&, const T&>) {
    return [f = std::move(f)](const void* m, handler_context&) mutable {
      f(*static_cast<const T*>(m));
    };
  } else {
    static_assert(std::is_invocable_v<F&, const T&, handler_context&>,
                  "a handler for T is callable as f(const T&, handler_context&) or f(const T&), "
                  "or is (a shared_ptr to) an object with such a handle() member");
  }
}

template <class H, class T, class = void>
struct has_handle_member : std::false_type {};
template <class H, class T>
struct has_handle_member<H, T,
                         std::void_t<decltype(std::declval<H&>().handle(
                           std::declval<const T&>(), std::declval<handler_context&>()))>>
  : std::true_type {};

template <class P>
struct is_shared_ptr : std::false_type {};
template <class P>
struct is_shared_ptr<std::shared_ptr<P>> : std::true_type {};

} // namespace detail

// How an endpoint's outbox keeps the inbox records of handled messages
// (issue 21). A copy of a message that arrives after its record was
// cleaned up is a new message: its handler runs again.
struct outbox_options {
  // How long a record is kept after the message's sends went out. At
  // least the longest retry time of the endpoint's policies
  // (bus::longest_retry_time: max_retry_time, 24 h by default), or the
  // bus refuses to build: a retry must never outlive its record.
  duration retention = std::chrono::hours(24 * 7);
  // How often the endpoint's cleaner looks for records past retention.
  duration cleanup_interval = std::chrono::minutes(1);
  // Records deleted per transaction: a cleanup of many runs batch by
  // batch, so deliveries on the same database never wait behind it.
  std::size_t cleanup_batch = 1000;
  // How often the endpoint's sweeper sends what a dead process stored and
  // never sent; the store's lease on this process's records lasts three
  // intervals, renewed at every sweep.
  duration sweep_interval = std::chrono::seconds(10);
  // Orphaned records claimed per sweep.
  std::size_t sweep_batch = 100;
};

// What a stream endpoint reads (issue 27, bus/stream.hpp): the stream,
// where it starts when no offset of its own is stored, and the retention
// the stream is declared with.
struct stream_reading {
  std::string stream;
  stream_start start = stream_start::next();
  stream_retention retention;
};

// Which threads run an endpoint's handlers.
enum class handler_threads {
  // Each slot's consumer actor has a thread of its own (a detached actor):
  // n slots are n handlers at once whatever CAF's thread count, and a
  // handler that blocks (a database client, an HTTP call) holds only its
  // own thread, never a worker that other actors need. The default.
  dedicated,
  // Handlers run inline on CAF's shared cooperative workers: fewer threads
  // and a cheaper hand-off per message, but at most as many handlers run at
  // once as CAF has workers, and a handler that blocks stalls every actor
  // of the process. Only for handlers that never block.
  caf_workers,
};

struct endpoint_definition {
  std::string name;          // also the name of its input queue (a stream endpoint: of its reader)
  std::size_t slots = 1;     // concurrency: handler executions at once (adaptive: its max)
  // Set: the limit within [min, max] adapts to the handlers' latency
  // (bus/concurrency_limit.hpp); `slots` is its max.
  std::optional<adaptive_slots> adaptive;
  handler_threads threads = handler_threads::dedicated;
  std::string error_queue;   // default: <name>_error
  std::string skipped_queue; // default: <name>_skipped
  bool discard_skipped = false;
  duration drain_timeout{std::chrono::seconds(30)}; // how long stop waits for work in flight
  std::vector<detail::handler_slot> handlers;

  // Recoverability of the endpoint scope; each handler may override the
  // rules (the consumer scope).
  std::optional<rule_set> rules;
  // Unrecoverable types declared on the endpoint, each as the call that
  // adds it to the bus's set.
  std::vector<void (*)(unrecoverable_exceptions&)> unrecoverable;
  custom_policy custom;                   // empty: the bus's, else the default policy
  bool immediate_retries = true;          // off: in-process retries are skipped
  bool discard_faulted = false;           // terminal failures are discarded, not moved to error
  bool publish_faults = true;             // raise fault<T> at a terminal failure

  std::size_t max_message_bytes = 0; // 0: no limit
  // Names the type of a message with none this endpoint handles (empty: the
  // message is skipped as it is).
  type_mapping foreign_types;
  // Set: the endpoint reads MassTransit's envelope, and these are the
  // MassTransit names of its types.
  std::shared_ptr<const masstransit::message_names> masstransit;
  // Set: the endpoint reads what NServiceBus sends, and these are the .NET
  // names of its types.
  std::shared_ptr<const nservicebus::message_names> nservicebus;

  // Automatic rate limiting (off unless a threshold is set), and what to
  // call when it starts and ends (on the circuit breaker's thread).
  rate_limit_settings rate_limit;
  std::function<void()> on_rate_limit_started;
  std::function<void()> on_rate_limit_ended;

  // The dependency breakers (declared on the bus) this endpoint pauses for:
  // those named with depends_on(), and, once the bus is built, every one
  // that a rule of its handlers trips.
  std::vector<std::string> dependencies;

  // Issue 27. Set: the endpoint reads this stream instead of a queue of its
  // own; its rules may neither retry nor redeliver.
  std::optional<stream_reading> stream;

  // Mistakes found while building (e.g. rules for a type with no handler),
  // reported when the bus is built.
  std::vector<std::string> mistakes;

  // Issue 14. The endpoint's retry budget (empty: the bus's, if any); what
  // becomes of an expired message (empty: the bus's); whether the handlers'
  // sends inherit the remaining deadline of the message they handle.
  std::optional<retry_budget_settings> retry_budget;
  std::optional<expired_action> expired_messages;
  bool inherit_deadline = false;

  // Issue 21. The outbox and inbox: a store makes each handler's effects
  // in the database and its sends happen once (bus/message_store.hpp).
  std::shared_ptr<message_store> store;
  outbox_options outbox;
};

class endpoint_builder {
public:
  explicit endpoint_builder(std::string name) { def_.name = std::move(name); }
  // An endpoint that reads `stream` (bus_builder::stream_endpoint).
  endpoint_builder(std::string name, std::string stream) : endpoint_builder(std::move(name)) {
    def_.stream.emplace();
    def_.stream->stream = std::move(stream);
  }

  // Handler executions at once. Must be at least 1.
  endpoint_builder& slots(std::size_t n) {
    def_.slots = n;
    def_.adaptive.reset();
    return *this;
  }
  // Handler executions at once, a limit the endpoint adjusts between
  // settings.min and settings.max from how long its deliveries take: less
  // when the dependency behind the handlers queues, more while it does not
  // (TCP Vegas, bus/concurrency_limit.hpp). It has settings.max consumers
  // (threads, with dedicated handler threads) and takes as many deliveries
  // from the transport.
  endpoint_builder& slots(adaptive_slots settings) {
    def_.slots = settings.max;
    def_.adaptive = settings;
    return *this;
  }
  // A stream endpoint's (bus_builder::stream_endpoint): where it starts
  // reading the first time, and the retention its stream is declared with.
  // Where it stored an offset of its own, it resumes there instead.
  endpoint_builder& start_from(stream_start start) {
    if (def_.stream)
      def_.stream->start = start;
    else
      def_.mistakes.push_back("endpoint '" + def_.name
                              + "': start_from() is for an endpoint that reads a stream");
    return *this;
  }
  endpoint_builder& retention(stream_retention kept) {
    if (def_.stream)
      def_.stream->retention = kept;
    else
      def_.mistakes.push_back("endpoint '" + def_.name
                              + "': retention() is for an endpoint that reads a stream");
    return *this;
  }

  // Which threads run the handlers: a thread per slot (the default, for
  // handlers that may block) or CAF's workers (for handlers that never do).
  // On CAF's test coordinator (the test harness) handlers always run inline,
  // so that virtual time stays deterministic.
  endpoint_builder& handler_threads(bus::handler_threads threads) {
    def_.threads = threads;
    return *this;
  }
  endpoint_builder& error_queue(std::string queue) {
    def_.error_queue = std::move(queue);
    return *this;
  }
  endpoint_builder& skipped_queue(std::string queue) {
    def_.skipped_queue = std::move(queue);
    return *this;
  }
  // Messages no handler accepts are logged and dropped instead of kept.
  endpoint_builder& discard_skipped(bool on = true) {
    def_.discard_skipped = on;
    return *this;
  }
  // How long a stop waits for handlers in flight before it gives their
  // messages back to the transport. A stop still returns only once every
  // handler has returned; what a handler does after its message was given
  // back (its sends, its outcome) is dropped. Handlers can see a stop
  // coming with handler_context::stop_requested().
  endpoint_builder& drain_timeout(duration d) {
    def_.drain_timeout = d;
    return *this;
  }

  // Exception policies of the endpoint scope: they replace the bus's
  // (and host's, and transport's) as a whole for this endpoint.
  endpoint_builder& add_resilience() {
    rules().add_resilience();
    return *this;
  }
  endpoint_builder& add_resilience(const std::function<void(policy_builder&)>& configure) {
    rules().add_resilience(configure);
    return *this;
  }

  // Exception policies of the consumer scope: only for the handler of T,
  // replacing every other scope for it. Call after handle<T>().
  template <class T>
  endpoint_builder& resilience_for(const std::function<void(policy_builder&)>& configure) {
    for (auto& slot : def_.handlers) {
      if (slot.cpp_type == std::type_index(typeid(T))) {
        if (!slot.rules)
          slot.rules.emplace();
        slot.rules->add_resilience(configure);
        return *this;
      }
    }
    def_.mistakes.push_back("endpoint '" + def_.name + "': resilience_for<" + typeid(T).name()
                            + "> names a type with no handler (call handle<T>() first)");
    return *this;
  }

  // E and its subtypes go to the error queue on their first failure.
  template <class E>
  endpoint_builder& unrecoverable() {
    def_.unrecoverable.push_back([](unrecoverable_exceptions& set) { set.add<E>(); });
    return *this;
  }

  // Replaces the decision for this endpoint (NServiceBus's custom
  // recoverability policy); it may call bus::default_policy().
  endpoint_builder& recoverability_policy(custom_policy policy) {
    def_.custom = std::move(policy);
    return *this;
  }

  // Off: no in-process retries; rules that retry go on to redelivery.
  endpoint_builder& immediate_retries(bool on) {
    def_.immediate_retries = on;
    return *this;
  }

  // Messages that fail for good are logged and dropped instead of moved to
  // the error queue (fault<T> is still raised unless publish_faults(false)).
  endpoint_builder& discard_faulted_messages(bool on = true) {
    def_.discard_faulted = on;
    return *this;
  }

  // Automatic rate limiting: after `consecutive_failures` failed attempts
  // in a row (immediate retries count), the endpoint handles one message
  // at a time, waits `wait_between_attempts` after each that fails, and
  // skips immediate retries; the first success restores full concurrency.
  // It throttles the whole endpoint, every message type alike. Messages not
  // yet attempted wait; they are neither failed nor dead-lettered.
  endpoint_builder& rate_limit(int consecutive_failures, duration wait_between_attempts,
                               std::function<void()> on_started = {},
                               std::function<void()> on_ended = {}) {
    def_.rate_limit = {consecutive_failures, wait_between_attempts};
    def_.on_rate_limit_started = std::move(on_started);
    def_.on_rate_limit_ended = std::move(on_ended);
    return *this;
  }

  // Messages whose body arrived larger than `bytes` go to the error queue
  // with the reason, never to a handler. Applies to bodies that came over
  // a transport as text; a typed message sent in process is never
  // serialized, so it has no size to check.
  endpoint_builder& max_message_size(std::size_t bytes) {
    def_.max_message_bytes = bytes;
    return *this;
  }

  // What a message whose type this endpoint has no handler for is, when
  // its producer is not a bus: a plain AMQP client that sets no type, or
  // one that names it its own way (bus/type_mapping.hpp). The mapping's
  // answer is used if the endpoint handles that type; otherwise the message
  // is skipped, and the skipped reason says what the mapping named. A
  // mapping that throws names nothing.
  //   e.foreign_types(bus::type_by_header(bus::header::amqp_routing_key,
  //                                       {{"orders.placed", "order_placed"}}));
  endpoint_builder& foreign_types(type_mapping mapping) {
    def_.foreign_types = std::move(mapping);
    return *this;
  }

  // The endpoint reads what MassTransit sends (bus/masstransit.hpp): a
  // message in MassTransit's JSON envelope (content type
  // application/vnd.masstransit+json) is unwrapped, its message is the
  // body, and the first of its type names listed here is its type. Its
  // queue is bound to the exchange MassTransit publishes each listed type
  // to ("Contracts:OrderPlaced" for "urn:message:Contracts:OrderPlaced").
  // It also speaks MassTransit: what its handlers send, publish or reply
  // of a listed type goes out in MassTransit's envelope (a publish to the
  // type's exchange). A listed type it has no handler for names only what
  // it sends; every listed type must be a registered message.
  //   e.masstransit({{"urn:message:Contracts:OrderPlaced", "order_placed"}})
  endpoint_builder& masstransit(
    const std::vector<std::pair<std::string, std::string>>& urn_to_registered) {
    auto names = masstransit::message_names::from(urn_to_registered);
    if (!names)
      def_.mistakes.push_back("endpoint '" + def_.name + "': " + names.error().message);
    else
      def_.masstransit = std::make_shared<const masstransit::message_names>(std::move(*names));
    return *this;
  }

  // The endpoint reads what NServiceBus sends over RabbitMQ
  // (bus/nservicebus.hpp): a message with NServiceBus's headers takes its
  // id, conversation, reply address and times from them, and its type from
  // the first of its NServiceBus.EnclosedMessageTypes listed here (the
  // .NET type's full name, without the assembly). The endpoint gets what
  // NServiceBus's conventional routing topology expects of one: an exchange
  // of its own name bound to its queue (where NServiceBus sends to it), and
  // its queue bound to the exchange NServiceBus publishes each listed type
  // it handles to ("Contracts:OrderPlaced"). It also speaks NServiceBus:
  // what its handlers send, publish or reply of a listed type carries
  // NServiceBus's headers (a publish goes to the type's exchange). A listed
  // type it has no handler for names only what it sends; every listed type
  // must be a registered message.
  //   e.nservicebus({{"Contracts.OrderPlaced", "order_placed"}})
  endpoint_builder& nservicebus(
    const std::vector<std::pair<std::string, std::string>>& type_to_registered) {
    auto names = nservicebus::message_names::from(type_to_registered);
    if (!names)
      def_.mistakes.push_back("endpoint '" + def_.name + "': " + names.error().message);
    else
      def_.nservicebus = std::make_shared<const nservicebus::message_names>(std::move(*names));
    return *this;
  }

  // The endpoint depends on the dependency breaker `dependency` (declared
  // with bus_builder::dependency()): while it is open, the endpoint takes no
  // message; they wait on its queue. A rule of its handlers that trips a
  // breaker makes the endpoint depend on it without this call.
  endpoint_builder& depends_on(std::string dependency) {
    def_.dependencies.push_back(std::move(dependency));
    return *this;
  }
  // Bounds this endpoint's retries (immediate and redeliveries) to a share
  // of its first attempts: see bus/policy/retry_budget.hpp. Replaces the
  // bus's budget. The named form shares one budget among every endpoint
  // that names it; they must all give the same settings.
  endpoint_builder& retry_budget(retry_budget_settings settings = {}) {
    def_.retry_budget = std::move(settings);
    return *this;
  }
  endpoint_builder& retry_budget(std::string name, retry_budget_settings settings = {}) {
    settings.name = std::move(name);
    def_.retry_budget = std::move(settings);
    return *this;
  }
  // What becomes of a message that arrives, or is due to run again, after
  // its bus-expires-at: discarded (the default) or dead-lettered with the
  // reason "expired". It never reaches its handler.
  endpoint_builder& expired_messages(expired_action action) {
    def_.expired_messages = action;
    return *this;
  }
  // What the handlers send expires no later than the message they handle
  // (opt-in): a deadline travels down a chain of messages.
  endpoint_builder& inherit_deadline(bool on = true) {
    def_.inherit_deadline = on;
    return *this;
  }

  // Exactly-once effects with the application's database: every attempt
  // runs inside a transaction of `store` that holds the inbox record of the
  // message, the handler's own writes (handler_context::transaction) and
  // its sends; they commit together after the handler returns, the sends
  // go out after the commit, and a copy of a message handled already is
  // acknowledged without running the handler. The store's calls block, so
  // the handlers need a thread per slot (the default handler_threads) and
  // must be functions, not actors. Several endpoints may share one store.
  // The endpoint's inbox records are cleaned up after `options.retention`.
  endpoint_builder& outbox(std::shared_ptr<message_store> store, outbox_options options = {}) {
    def_.store = std::move(store);
    def_.outbox = options;
    return *this;
  }

  // Whether a terminal failure raises fault<T> (on by default).
  endpoint_builder& publish_faults(bool on) {
    def_.publish_faults = on;
    return *this;
  }

  // Registers a handler for messages of type T: a function object, an
  // object with a handle(const T&, handler_context&) member, or a
  // shared_ptr to one. One handler per type and endpoint.
  template <class T, class H>
  endpoint_builder& handle(H handler) {
    if constexpr (detail::is_shared_ptr<H>::value) {
      static_assert(detail::has_handle_member<typename H::element_type, T>::value,
                    "the object needs a handle(const T&, handler_context&) member");
      return add<T>([h = std::move(handler)](const T& m, handler_context& ctx) {
        h->handle(m, ctx);
      });
    } else if constexpr (detail::has_handle_member<H, T>::value
                         && !std::is_invocable_v<H&, const T&, handler_context&>
                         && !std::is_invocable_v<H&, const T&>) {
      return add<T>([h = std::move(handler)](const T& m, handler_context& ctx) mutable {
        h.handle(m, ctx);
      });
    } else {
      return add<T>(std::move(handler));
    }
  }

  // Registers a user's actor as the handler of T: the consumer sends it
  // (handle_atom, T) as a request; any reply is success, an error reply or
  // no reply within `timeout` is a failed attempt. Defined in
  // bus/actor_handler.hpp, which brings in CAF.
  template <class T>
  endpoint_builder& handle_with_actor(const caf::actor& handler, duration timeout);

  [[nodiscard]] const endpoint_definition& definition() const& noexcept { return def_; }
  [[nodiscard]] endpoint_definition definition() && noexcept { return std::move(def_); }

private:
  rule_set& rules() {
    if (!def_.rules)
      def_.rules.emplace();
    return *def_.rules;
  }

  template <class T, class F>
  endpoint_builder& add(F f) {
    def_.handlers.push_back(detail::handler_slot{
      std::type_index(typeid(T)), detail::make_invoker<T>(std::move(f)), {}, {}, {}});
    return *this;
  }

  endpoint_definition def_;
};

} // namespace bus
