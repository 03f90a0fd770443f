// The scheduler actor: holds an endpoint's messages waiting for redelivery
// and sends each back into the endpoint's input queue when its delay has
// passed. One heap, one CAF timer armed at a time (for the earliest due
// time), however many messages wait. A transport with delayed delivery (a
// broker) holds them instead: the scheduler hands each over at once.
//
// Protocol: (schedule_atom, pending_redelivery, duration, announcement) ->
// ok_atom once accepted. The announcement (null for none) is the
// redelivery_scheduled event: the scheduler raises it as it accepts the
// message, so the event always comes before the message can come back.
// (stop_atom) sends everything still waiting back to the queue at once,
// logs how many, answers ok_atom and quits, so a stop never loses
// a message and the endpoint knows when they are all back.
#pragma once

#include <cstdint>
#include <memory>

#include <caf/actor_clock.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/delay_queue.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

// A message on its way back: uniquely owned, so firing moves it into the
// transport without a copy.
using pending_redelivery = std::shared_ptr<envelope>;
// The event to raise once the scheduler holds a message; null for none.
using announcement = std::shared_ptr<const bus_event>;

struct scheduler_state {
  endpoint_runtime_ptr rt;
  delay_queue<caf::actor_clock::time_point, pending_redelivery> pending;
  std::uint64_t timer_generation = 0; // a timer of an older generation is stale
  caf::actor_clock::time_point armed_for{};
  bool armed = false;
  static inline const char* name = "bus.scheduler";
};

caf::behavior scheduler_actor(caf::stateful_actor<scheduler_state>* self, endpoint_runtime_ptr rt);

} // namespace bus::detail
