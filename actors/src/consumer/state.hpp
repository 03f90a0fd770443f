// What a consumer actor knows while it works: the delivery under way,
// across its immediate retries, and the ending it waits for. Every file of
// the consumer's folder works on this state (consumer_actor.hpp says which
// calls which).
#pragma once

#include <memory>
#include <optional>
#include <random>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/caught_exception.hpp"
#include "bus/delivery_history.hpp"
#include "bus/exception_info.hpp"
#include "bus/fault.hpp"
#include "bus/message_store.hpp"
#include "bus/policy/action.hpp"
#include "delivery_claim.hpp"
#include "redelivery_memory.hpp"
#include "endpoint_runtime.hpp"
#include "ready_line.hpp"

namespace bus::detail {

// What a consumer is waiting for from the transport or a timer before it
// can go on with its delivery.
enum class ending_step : std::uint8_t {
  outbox,        // the handler's sends, after a successful attempt
  error_queue,   // the copy with every fault header
  minimal_error_queue, // the copy with minimal fault headers
  skipped_queue, // the copy for the skipped queue
  redelivery,    // the hand-off to the scheduler
};

// The delivery a consumer works on, across its immediate retries.
struct current_delivery {
  delivery item;
  claim_ptr claim;                   // shared with the endpoint: who ends it
  const handler_slot* handler = nullptr;
  message_body body;                 // decoded, typed
  int attempt = 1;                   // attempts in this delivery, this one included
  bool throttled = false;            // dispatched while rate limited: no immediate retries
  delivery_history history;          // what the message says of its past, read once
  caught_exception last_exception;   // of the last failed attempt, looked into once
  exception_info last_what;          // its type and message, described once per failure
  bool probe = false;                // a half-open dependency breaker's probe

  // The ending under way.
  std::optional<delayed_retry> redelivery; // decided, not yet accepted by the scheduler
  std::optional<fault_details> fault;      // decided, not yet on the error queue
  std::string fault_queue;                 // where it goes
  std::size_t outbox_left = 0;             // outbox sends not completed yet
  std::optional<bus::error> outbox_error;  // the first refusal among them
  int refusals = 0;                        // "not now" refusals so far: the backoff
  ending_step waiting_for = ending_step::outbox; // what the backoff timer tries again
  // A hand-off to the scheduler waiting for its answer: which step asked,
  // and which hand-off it is (a late answer to an older one is ignored).
  std::optional<ending_step> handing_off;
  std::uint64_t handoff = 0;
  // When the current attempt started (the handler's context says the same):
  // with the attempt number, it names the attempt's span (tracing.hpp).
  time_point attempt_started{};
  // The outbox, on an endpoint with a message store: the open transaction
  // of the attempt under way, and whether the sends going out now were
  // stored (they are marked dispatched once all are out).
  std::unique_ptr<store_transaction> transaction;
  bool sends_stored = false;
  time_point committed_at{}; // when the attempt's transaction committed: the dispatch's start
};

struct consumer_state {
  endpoint_runtime_ptr rt;
  caf::actor endpoint;
  caf::actor scheduler;
  // Where an in-memory redelivery waits: the consumer puts it there itself.
  std::shared_ptr<redelivery_memory> redeliveries;
  std::mt19937_64 jitter; // draws for retry delays; seeded per consumer
  std::optional<current_delivery> current;
  // The endpoint's offers ahead, shared with it (ready_line.hpp); null
  // where it offers none.
  std::shared_ptr<ready_line> ready;
  // Taken from it as the current delivery ended: it starts in a message
  // of its own (next_atom), so that a delivery never starts on the stack
  // of the one before it.
  std::optional<offered_delivery> next;
  static inline const char* name = "bus.consumer";
};

using consumer = caf::stateful_actor<consumer_state>;

} // namespace bus::detail
