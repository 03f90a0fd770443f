// Serving a message type with an actor of your own. The consumer sends the
// actor `(bus::handle_atom, T)` as a request; a reply (of any kind the
// handler returns, including none) is success, an error reply or no reply
// within the timeout is a failed attempt that the endpoint's recoverability
// policy handles like an exception.
//
//   caf::behavior billing(caf::event_based_actor*) {
//     return {[](bus::handle_atom, const order_placed& m) { /* ... */ }};
//   }
//   e.handle_with_actor<order_placed>(sys.spawn(billing), std::chrono::seconds(5));
//
// T goes into a CAF message, so it must be inspectable (an inspect()
// overload) or allowed with CAF_ALLOW_UNSAFE_MESSAGE_TYPE.
#pragma once

#include <functional>
#include <memory>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/message.hpp>

#include "bus/endpoint_builder.hpp"

namespace bus {

using handle_atom = caf::atom_constant<caf::atom("handle")>;

namespace detail {

struct actor_invoker {
  caf::actor handler;
  duration timeout;
  // Builds the request (handle_atom, T) from a pointer to the typed body.
  std::function<caf::message(const void* message)> make_request;
};

} // namespace detail

template <class T>
endpoint_builder& endpoint_builder::handle_with_actor(const caf::actor& handler,
                                                      duration timeout) {
  auto invoker = std::make_shared<const detail::actor_invoker>(detail::actor_invoker{
    handler, timeout, [](const void* m) {
      return caf::make_message(handle_atom::value, *static_cast<const T*>(m));
    }});
  def_.handlers.push_back(
    detail::handler_slot{std::type_index(typeid(T)), {}, std::move(invoker), {}, {}});
  return *this;
}

} // namespace bus
