#include "topology.hpp"

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

// How long a consumer waits for an actor-served handler. The script actor
// answers at once (or kills the consumer), so this only bounds a bug.
constexpr duration actor_handler_timeout = std::chrono::seconds(30);

// Serves the script of `h` for message type T in an actor, so that a "die"
// step can kill the consumer that asked, mid-message, as a crashing
// consumer would. A "throw" step answers with an error, which the bus turns
// into a handler_actor_error.
template <class T>
caf::behavior script_actor(caf::event_based_actor* self, std::shared_ptr<script_book> book,
                           handler_spec h) {
  return {[=](bus::handle_atom, const T& m) -> caf::result<void> {
    auto s = book->next(h, m.name);
    switch (s.what) {
      case step::kind::die:
        book->record_death();
        self->send_exit(caf::actor_cast<caf::actor>(self->current_sender()),
                        caf::exit_reason::kill);
        return caf::unit;
      case step::kind::raise:
        return caf::make_error(caf::sec::runtime_error,
                               s.message.empty() ? std::string("the handler actor failed")
                                                 : s.message);
      case step::kind::succeed:
      case step::kind::poison: // refused by the parser for actor-served scripts
        break;
    }
    return caf::unit;
  }};
}

void add_handler(endpoint_builder& e, const handler_spec& h, std::shared_ptr<script_book> book,
                 caf::actor_system& system, handler_actors& actors) {
  with_message_slot(h.message_slot, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (h.by_actor) {
      auto actor = system.spawn(script_actor<T>, book, h);
      actors.state().actors.push_back(actor);
      e.handle_with_actor<T>(actor, actor_handler_timeout);
    } else {
      e.handle<T>([book, h](const T& m, handler_context& ctx) { perform(book->next(h, m.name), ctx); });
    }
    if (h.policy)
      e.resilience_for<T>(configure_of(*h.policy));
  });
}

void configure_endpoint(endpoint_builder& e, const endpoint_spec& spec,
                        const std::shared_ptr<script_book>& book, caf::actor_system& system,
                        handler_actors& actors) {
  e.slots(spec.slots);
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
  for (const auto& h : spec.handlers)
    add_handler(e, h, book, system, actors);
}

} // namespace

std::unique_ptr<handler_actors> configure_bus(bus_builder& b, const scenario& s,
                                              std::shared_ptr<script_book> book,
                                              caf::actor_system& system) {
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
  for (const auto& spec : s.endpoints)
    b.endpoint(spec.name, [&](endpoint_builder& e) {
      configure_endpoint(e, spec, book, system, *actors);
    });
  return actors;
}

result<void> send_message(message_bus& bus, const send_spec& m) {
  send_options options;
  options.headers.set(scenario_name_header, m.name);
  result<void> sent;
  with_message_slot(m.message_slot, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sent = bus.send(m.to, T{m.name}, options);
  });
  return sent;
}

} // namespace bus::scenario
