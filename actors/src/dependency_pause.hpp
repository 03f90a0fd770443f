// An endpoint's side of the dependency breakers it depends on: it
// subscribes to their gates, pauses while one is not closed (its messages
// wait in its queue and its waiting line, none is handed to a consumer),
// lets the single probe of a half-open breaker through, reports its
// successes, and resumes once every breaker is closed. Called only from
// the endpoint actor (endpoint_actor.cpp), on its own thread.
#pragma once

#include <cstdint>

#include <caf/stateful_actor.hpp>

#include "atoms.hpp"
#include "endpoint_actor.hpp"

namespace bus::detail::dependencies {

using endpoint = caf::stateful_actor<endpoint_state>;

// At start: subscribes to every gate and reads their states.
void join(endpoint* self);
// At the end of a stop: unsubscribes, and gives back a probe still out.
void leave(endpoint* self);

// Reads every gate again (on a notice or a wake-up): raises the events of
// what changed, pauses or resumes, and sets a wake-up timer for the end of
// the earliest open breaker's wait.
void sync(endpoint* self);

// While paused: hands the front of the waiting line to an idle consumer as
// the probe, if every breaker that is not closed is half-open and grants
// it. Returns whether the endpoint is paused (dispatch then goes no
// further).
bool paused_dispatch(endpoint* self);

// A delivery ended (done_atom): its success counts for every dependency;
// the probe's end without a verdict gives the probe back.
void ended(endpoint* self, std::uint64_t tag, outcome result);

} // namespace bus::detail::dependencies
