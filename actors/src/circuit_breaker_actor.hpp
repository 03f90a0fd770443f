// The circuit-breaker actor of an endpoint: carries out what a rate-limit
// transition means beyond the endpoint itself: it logs, counts and raises
// both transitions, and calls the user's callbacks (which may take their
// time: an alert over HTTP), so that the endpoint never waits for them.
//
// Rate limiting flows one way. The endpoint keeps the count itself (the
// pure rate_limiter), learning every attempt's outcome in order from its
// consumers, so the attempt that trips the limit is always seen before the
// next dispatch; it tells this actor (limit_atom, bool limited) on each
// transition. (stop_atom) -> ok_atom, then it quits.
#pragma once

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "endpoint_runtime.hpp"

namespace bus::detail {

struct circuit_breaker_state {
  endpoint_runtime_ptr rt;
  static inline const char* name = "bus.circuit_breaker";
};

caf::behavior circuit_breaker_actor(caf::stateful_actor<circuit_breaker_state>* self,
                                    endpoint_runtime_ptr rt);

} // namespace bus::detail
