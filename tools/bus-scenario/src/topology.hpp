// Builds the bus a scenario describes: its message types, policies of every
// scope, unrecoverable exceptions, endpoints and scripted handlers. The same
// for virtual time and the wall clock; only the builder differs.
#pragma once

#include <memory>

#include "bus/bus.hpp"
#include "naming_transport.hpp"
#include "outbox_stores.hpp"
#include "scenario.hpp"
#include "script_book.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace bus::scenario {

// The actors that serve scripts with "die". They must be told to quit once
// the bus has stopped, or the actor system waits for them for ever.
class handler_actors {
public:
  handler_actors();
  ~handler_actors(); // stop()
  handler_actors(const handler_actors&) = delete;
  handler_actors& operator=(const handler_actors&) = delete;

  void stop();

  struct impl;
  [[nodiscard]] impl& state() noexcept { return *impl_; }

private:
  std::unique_ptr<impl> impl_;
};

// Configures `b` for `s`; the handlers record their attempts in `book`.
// Handlers served by actors are spawned in `system`, which must be the
// system of `b`. The endpoints with an outbox get theirs from `stores`.
[[nodiscard]] std::unique_ptr<handler_actors> configure_bus(bus_builder& b, const scenario& s,
                                                            std::shared_ptr<script_book> book,
                                                            caf::actor_system& system,
                                                            const outbox_stores& stores);

// Sends message `m` of `s` through `bus`, its scenario name in a header,
// as many times as it has copies, all with one message id.
[[nodiscard]] result<void> send_message(message_bus& bus, const send_spec& m);

} // namespace bus::scenario
