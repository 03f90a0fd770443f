// A consumer actor: one concurrency slot of an endpoint. It takes one
// delivery at a time from its endpoint, runs the handler, carries out what
// follows a failure, and reports the outcome back; the endpoint settles the
// delivery with the transport and frees the slot.
#pragma once

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "endpoint_runtime.hpp"

namespace bus::detail {

struct consumer_state {
  endpoint_runtime_ptr rt;
  caf::actor endpoint;
  static inline const char* name = "bus.consumer";
};

caf::behavior consumer_actor(caf::stateful_actor<consumer_state>* self, endpoint_runtime_ptr rt,
                             caf::actor endpoint);

} // namespace bus::detail
