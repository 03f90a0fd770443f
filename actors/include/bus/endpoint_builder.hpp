// Describes one endpoint: its queue, its concurrency slots and its
// handlers. A handler for T also subscribes the endpoint to T's publishes.
//
//   e.slots(4)
//    .handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) { ... })
//    .handle<order_cancelled>(std::make_shared<cancellation_handler>());  // has handle(const T&, ctx)
//
// A handler runs on a consumer actor, one message at a time per consumer;
// the same handler object serves every slot, so a handler with mutable
// state must synchronise it itself.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "bus/handler_context.hpp"
#include "bus/time.hpp"

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

struct endpoint_definition {
  std::string name;          // also the name of its input queue
  std::size_t slots = 1;     // concurrency: handler executions at once
  std::string error_queue;   // default: <name>_error
  std::string skipped_queue; // default: <name>_skipped
  bool discard_skipped = false;
  duration drain_timeout{std::chrono::seconds(30)}; // how long stop waits for work in flight
  std::vector<detail::handler_slot> handlers;
};

class endpoint_builder {
public:
  explicit endpoint_builder(std::string name) { def_.name = std::move(name); }

  // Handler executions at once. Must be at least 1.
  endpoint_builder& slots(std::size_t n) {
    def_.slots = n;
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
  endpoint_builder& drain_timeout(duration d) {
    def_.drain_timeout = d;
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
  template <class T, class F>
  endpoint_builder& add(F f) {
    def_.handlers.push_back(
      detail::handler_slot{std::type_index(typeid(T)), detail::make_invoker<T>(std::move(f)), {}});
    return *this;
  }

  endpoint_definition def_;
};

} // namespace bus
