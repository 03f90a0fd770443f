// A consumer actor: one concurrency slot of an endpoint. It takes one
// delivery at a time from its endpoint, runs the handler, asks the policy
// what follows a failure and carries it out, and reports the outcome back;
// the endpoint settles the delivery with the transport and frees the slot.
//
// An immediate retry is a delayed message to itself: the slot stays held.
// A redelivery is handed to the endpoint's scheduler: the slot is freed
// once the scheduler has accepted it.
#pragma once

#include <optional>
#include <random>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/exception_info.hpp"
#include "bus/policy/action.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

// The delivery a consumer works on, across its immediate retries.
struct current_delivery {
  delivery item;
  const handler_slot* handler = nullptr;
  message_body body;                 // decoded, typed
  int attempt = 1;                   // attempts in this delivery, this one included
  bool throttled = false;            // dispatched while rate limited: no immediate retries
  std::exception_ptr last_exception; // of the last failed attempt
  exception_info last_what;          // its type and message, described once per failure
  std::optional<delayed_retry> redelivery; // decided, not yet accepted by the scheduler
  int scheduler_refusals = 0;             // transient refusals of that redelivery so far
};

struct consumer_state {
  endpoint_runtime_ptr rt;
  caf::actor endpoint;
  caf::actor scheduler;
  caf::actor breaker; // null when rate limiting is off
  std::mt19937_64 jitter; // draws for retry delays; seeded per consumer
  std::optional<current_delivery> current;
  static inline const char* name = "bus.consumer";
};

caf::behavior consumer_actor(caf::stateful_actor<consumer_state>* self, endpoint_runtime_ptr rt,
                             caf::actor endpoint, caf::actor scheduler, caf::actor breaker);

} // namespace bus::detail
