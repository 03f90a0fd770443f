// A consumer actor: one concurrency slot of an endpoint. It takes one
// delivery at a time from its endpoint, runs the handler, asks the policy
// what follows a failure and carries it out, settles the delivery with the
// transport and reports to the endpoint, which frees the slot.
//
// It runs on a thread of its own unless the endpoint's handlers never
// block (bus::handler_threads), so a handler may block it. It never waits
// on the transport: what it sends (the outbox, the error or skipped queue,
// fault<T>) goes through the port's asynchronous calls, whose completions
// come back to it as messages. A refusal "for now" (the broker out of
// reach) keeps the slot and is tried again with backoff.
//
// An immediate retry is a delayed message to itself: the slot stays held.
// A redelivery is handed to the endpoint's scheduler: the slot is freed
// once the scheduler has accepted it.
//
// Its folder, each file calling only those listed after it:
//
//   consumer_actor   the behaviour: which message starts which step
//   attempt          a delivery's attempts: begin, run the handler, retry
//   reading          readies a delivery for its handler, or ends it unread
//   outbox           a successful attempt's sends, with the message store's
//                    inbox where the endpoint has one
//   outcome          what an attempt's end means: handled, or failed and
//                    decided by the policy
//   dependency_hold  a delivery given back unharmed while a dependency is down
//   resilience       the retry budget and deadlines
//   endings          carrying out the policy's decision: retry, redelivery,
//                    error queue, discard, skipped queue
//   attempt_spans    tells the span observer how an attempt ended
//   settling         claims a delivery's ending, settles it, reports to the
//                    endpoint and takes the next offer
//   state            the delivery under way
#pragma once

#include <memory>

#include <caf/actor.hpp>
#include <caf/behavior.hpp>

#include "consumer/state.hpp"
#include "endpoint_runtime.hpp"
#include "ready_line.hpp"

namespace bus::detail {

caf::behavior consumer_actor(consumer* self, endpoint_runtime_ptr rt, caf::actor endpoint,
                             caf::actor scheduler, std::shared_ptr<redelivery_memory> redeliveries,
                             std::shared_ptr<ready_line> ready);

} // namespace bus::detail
