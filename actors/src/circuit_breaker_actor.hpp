// The circuit-breaker actor of an endpoint: consumers report every attempt
// to it; after enough consecutive failures it puts the endpoint into rate
// limited mode, and the first success takes it out. It logs, counts and
// raises both transitions and calls the user's callbacks.
//
// Protocol: (attempt_atom, bool succeeded) from consumers; it sends
// (limit_atom, bool limited) to the endpoint on each transition, and
// answers (status_atom) with whether the endpoint is limited. A consumer
// reports an attempt before it reports the delivery done, so the answer
// to a status request sent on that "done" already counts the attempt.
// (stop_atom) -> ok_atom, then it quits.
#pragma once

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/rate_limiter.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

struct circuit_breaker_state {
  endpoint_runtime_ptr rt;
  caf::actor endpoint;
  rate_limiter limiter{{}};
  static inline const char* name = "bus.circuit_breaker";
};

caf::behavior circuit_breaker_actor(caf::stateful_actor<circuit_breaker_state>* self,
                                    endpoint_runtime_ptr rt, caf::actor endpoint);

} // namespace bus::detail
