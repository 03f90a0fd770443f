// The scheduler actor: holds an endpoint's messages waiting for redelivery
// and sends each back into the endpoint's input queue when its delay has
// passed. One heap, one CAF timer armed at a time (for the earliest due
// time), however many messages wait. A transport with delayed delivery (a
// broker) holds them instead: the scheduler hands each over at once.
//
// It never waits on the transport: every hand-off goes through the port's
// asynchronous calls, and their completions come back as messages, so a
// broker that takes seconds to confirm (or is out of reach) holds no
// thread, and many hand-offs are in flight at once.
//
// In memory, a consumer puts its redelivery in the endpoint's memory
// itself (redelivery_memory::accept) and sends (arm_atom) only when it is
// due before the scheduler's timer: no request, no answer, per message.
//
// Protocol: (schedule_atom, pending_redelivery, duration, announcement) ->
// ok_atom once the broker confirmed it holds the message (a transport with
// delayed delivery), or an error of category scheduler_refusal. The
// announcement (null for none) is the redelivery_scheduled event: raised
// as the message is accepted, before it can come back.
// (stop_atom) sends everything still waiting back to the queue at once,
// logs how many, answers ok_atom once the transport has answered for them
// all, and quits, so the endpoint knows when they are all back. One the
// transport refuses then is appended to the endpoint's dead-letter file:
// the memory that held it ends with the process.
//
// What it holds in memory is the endpoint's (redelivery_memory): a
// scheduler that dies leaves it to the one that replaces it.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include <caf/actor_clock.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "endpoint_runtime.hpp"
#include "redelivery_memory.hpp"

namespace bus::detail {

// The event to raise once the scheduler holds a message; null for none.
using announcement = std::shared_ptr<const bus_event>;

// A hand-off to a broker's delay levels, waiting for its confirm.
struct handoff {
  caf::response_promise reply;
  announcement notice;
};

struct scheduler_state {
  endpoint_runtime_ptr rt;
  // The messages waiting, and the answers of those on their way back:
  // the endpoint's, handed from a dead scheduler to its replacement.
  std::shared_ptr<redelivery_memory> memory;
  std::uint64_t timer_generation = 0; // a timer of an older generation is stale
  caf::actor_clock::time_point armed_for{};
  bool armed = false;
  std::unordered_map<std::uint64_t, handoff> handoffs; // by id, waiting for the broker
  std::uint64_t next_handoff = 0;
  bool stopping = false;
  caf::response_promise stopped; // answered once nothing is on its way back
  static inline const char* name = "bus.scheduler";
};

caf::behavior scheduler_actor(caf::stateful_actor<scheduler_state>* self, endpoint_runtime_ptr rt,
                             std::shared_ptr<redelivery_memory> memory);

} // namespace bus::detail
