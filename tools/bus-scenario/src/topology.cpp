#include "topology.hpp"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include <caf/all.hpp>

#include "apply_policy.hpp"
#include "bus/actor_handler.hpp"
#include "scenario_messages.hpp"

namespace bus::scenario {

struct handler_actors::impl {
  std::vector<caf::actor> actors;
};

handler_actors::handler_actors() : impl_(std::make_unique<impl>()) {}

handler_actors::~handler_actors() { stop(); }

void handler_actors::stop() {
  for (auto& a : impl_->actors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  impl_->actors.clear();
}

namespace {

// How long a consumer waits for an actor-served handler unless the handler
// says ("timeout"). A step without "takes" answers at once (or kills the
// consumer), so then this only bounds a bug.
constexpr duration default_actor_handler_timeout = std::chrono::seconds(30);

using finish_atom = caf::atom_constant<caf::atom("finish")>;

// The answer of step `s`, given to `promise`; a "die" step kills `consumer`
// instead, as a crash mid-message would.
void finish_step(caf::event_based_actor* self, const step& s, const caf::actor& consumer,
                 caf::response_promise& promise, script_book& book) {
  switch (s.what) {
    case step::kind::die:
      book.record_death();
      self->send_exit(consumer, caf::exit_reason::kill);
      promise.deliver(caf::unit);
      return;
    case step::kind::raise:
      promise.deliver(caf::make_error(caf::sec::runtime_error,
                                      s.message.empty() ? std::string("the handler actor failed")
                                                        : s.message));
      return;
    case step::kind::succeed:
    case step::kind::poison: // refused by the parser for actor-served scripts
      break;
  }
  promise.deliver(caf::unit);
}

// An attempt that is taking its time: answered when its timer fires.
struct attempt_in_progress {
  step what;
  caf::actor consumer;
  caf::response_promise promise;
};

// Serves the script of `h` for message type T in an actor, so that a "die"
// step can kill the consumer that asked, mid-message, as a crashing
// consumer would, and a step that "takes" time answers only when that much
// time has passed on the actor system's clock: virtual time under the
// harness, the wall clock otherwise. Meanwhile the consumer waits and its
// slot is busy, as with a slow handler. A "throw" step answers with an
// error, which the bus turns into a handler_actor_error. Attempts in
// progress are independent: an endpoint with several slots has several.
template <class T>
caf::behavior script_actor(caf::event_based_actor* self, std::shared_ptr<script_book> book,
                           handler_spec h) {
  auto in_progress = std::make_shared<std::map<std::uint64_t, attempt_in_progress>>();
  auto next_id = std::make_shared<std::uint64_t>(0);
  return {
    [=](bus::handle_atom, const T& m) -> caf::result<void> {
      auto s = book->next(h, m.name);
      auto consumer = caf::actor_cast<caf::actor>(self->current_sender());
      auto promise = self->make_response_promise();
      if (s.takes > duration{}) {
        auto id = (*next_id)++;
        in_progress->emplace(id, attempt_in_progress{s, consumer, promise});
        self->delayed_send(self, s.takes, finish_atom::value, id);
      } else {
        finish_step(self, s, consumer, promise, *book);
      }
      return caf::delegated<void>{};
    },
    [=](finish_atom, std::uint64_t id) {
      auto it = in_progress->find(id);
      if (it == in_progress->end())
        return;
      auto attempt = std::move(it->second);
      in_progress->erase(it);
      // A consumer that gave up (the timeout) ignores a late answer.
      finish_step(self, attempt.what, attempt.consumer, attempt.promise, *book);
    }};
}

// The handler's "sends", each named after the message it handles as the
// output names it (onward_name), in the header the naming transport reads.
// Buffered by the context: they go out only if the attempt succeeds.
void send_onward(const handler_spec& h, const std::string& handled, handler_context& ctx) {
  for (const auto& s : h.sends)
    with_message_slot(s.message_slot, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto name = onward_name(handled, s.type);
      send_options options;
      options.headers.set(scenario_name_header, name);
      if (auto sent = ctx.send(s.to, T{name}, std::move(options)); !sent)
        throw std::runtime_error("cannot send " + name + " to " + s.to + ": "
                                 + to_string(sent.error()));
    });
}

void add_handler(endpoint_builder& e, const handler_spec& h, std::shared_ptr<script_book> book,
                 caf::actor_system& system, handler_actors& actors) {
  with_message_slot(h.message_slot, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (h.by_actor) {
      auto actor = system.spawn(script_actor<T>, book, h);
      actors.state().actors.push_back(actor);
      e.handle_with_actor<T>(actor, h.timeout.value_or(default_actor_handler_timeout));
    } else {
      e.handle<T>([book, h](const T& m, handler_context& ctx) {
        auto step = book->next(h, m.name);
        send_onward(h, m.name, ctx);
        perform(step, ctx);
      });
    }
    if (h.policy)
      e.resilience_for<T>(configure_of(*h.policy));
  });
}

void configure_endpoint(endpoint_builder& e, const endpoint_spec& spec,
                        const std::shared_ptr<script_book>& book, caf::actor_system& system,
                        handler_actors& actors, const outbox_stores& stores) {
  e.slots(spec.slots);
  if (auto store = stores.of(spec.name))
    e.outbox(std::move(store));
  if (spec.error_queue)
    e.error_queue(*spec.error_queue);
  if (spec.policy)
    e.add_resilience(configure_of(*spec.policy));
  for (const auto& name : spec.unrecoverable)
    with_exception_type(name, [&](auto tag) { e.unrecoverable<typename decltype(tag)::type>(); });
  if (spec.immediate_retries)
    e.immediate_retries(*spec.immediate_retries);
  if (spec.discard_faulted_messages)
    e.discard_faulted_messages();
  if (spec.rate_limit)
    e.rate_limit(spec.rate_limit->consecutive_failures, spec.rate_limit->wait);
  for (const auto& name : spec.depends_on)
    e.depends_on(name);
  for (const auto& h : spec.handlers)
    add_handler(e, h, book, system, actors);
  if (spec.retry_budget)
    e.retry_budget(*spec.retry_budget);
  if (spec.expired_messages)
    e.expired_messages(*spec.expired_messages);
  if (spec.inherit_deadline)
    e.inherit_deadline();
}

} // namespace

std::unique_ptr<handler_actors> configure_bus(bus_builder& b, const scenario& s,
                                              std::shared_ptr<script_book> book,
                                              caf::actor_system& system,
                                              const outbox_stores& stores) {
  auto actors = std::make_unique<handler_actors>();
  for (std::size_t slot = 0; slot < s.message_types.size(); ++slot)
    with_message_slot(slot, [&](auto tag) {
      b.message<typename decltype(tag)::type>(s.message_types[slot]);
    });
  const auto& bus = s.bus;
  if (bus.host_policy)
    b.add_host_resilience(configure_of(*bus.host_policy));
  if (bus.transport_policy)
    b.add_transport_resilience(configure_of(*bus.transport_policy));
  if (bus.policy)
    b.add_resilience(configure_of(*bus.policy));
  for (const auto& name : bus.unrecoverable)
    with_exception_type(name, [&](auto tag) { b.unrecoverable<typename decltype(tag)::type>(); });
  if (bus.max_retry_time)
    b.max_retry_time(*bus.max_retry_time);
  if (bus.jitter_seed)
    b.jitter_seed(*bus.jitter_seed);
  for (const auto& d : bus.dependencies)
    b.dependency(d.name, d.settings);
  if (bus.retry_budget)
    b.retry_budget(*bus.retry_budget);
  if (bus.expired_messages)
    b.expired_messages(*bus.expired_messages);
  for (const auto& spec : s.endpoints)
    b.endpoint(spec.name, [&](endpoint_builder& e) {
      configure_endpoint(e, spec, book, system, *actors, stores);
    });
  return actors;
}

result<void> send_message(message_bus& bus, const send_spec& m) {
  send_options options;
  options.headers.set(scenario_name_header, m.name);
  if (m.malformed_body)
    options.headers.set(scenario_body_header, *m.malformed_body);
  options.time_to_live = m.time_to_live;
  for (int copy = 0; copy < m.copies; ++copy) {
    result<std::string> sent = error{errc::invalid_configuration, "no message type"};
    with_message_slot(m.message_slot, [&](auto tag) {
      using T = typename decltype(tag)::type;
      sent = bus.send(m.to, T{m.name}, options);
    });
    if (!sent)
      return sent.error();
    // Every further copy is the same message again, as a broker delivers
    // it again when its acknowledgement was lost.
    options.message_id = *sent;
  }
  return {};
}

} // namespace bus::scenario
