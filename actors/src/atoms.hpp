// The runtime's private vocabulary between its actors. Kept in namespace
// bus so that it never clashes with CAF's own atoms.
#pragma once

#include <cstdint>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "bus/events.hpp"
#include "delivery_claim.hpp"
#include "bus/transport.hpp"

namespace bus::detail {

using deliver_atom = caf::atom_constant<caf::atom("deliver")>;   // transport -> endpoint
using run_atom = caf::atom_constant<caf::atom("run")>;           // endpoint -> consumer
using next_atom = caf::atom_constant<caf::atom("next")>;         // consumer -> itself
using done_atom = caf::atom_constant<caf::atom("done")>;         // consumer -> endpoint
using stop_atom = caf::atom_constant<caf::atom("stop")>;         // bus -> endpoint
using go_atom = caf::atom_constant<caf::atom("go")>;             // bus -> endpoint
using drained_atom = caf::atom_constant<caf::atom("drained")>;   // endpoint -> itself
using overdue_atom = caf::atom_constant<caf::atom("overdue")>;   // endpoint -> itself
using schedule_atom = caf::atom_constant<caf::atom("schedule")>; // consumer -> scheduler
using tick_atom = caf::atom_constant<caf::atom("tick")>;         // scheduler -> itself
using arm_atom = caf::atom_constant<caf::atom("arm")>;           // consumer -> scheduler
using retry_atom = caf::atom_constant<caf::atom("retry")>;       // consumer -> itself
using ok_atom = caf::atom_constant<caf::atom("ok")>;
using attempt_atom = caf::atom_constant<caf::atom("attempt")>;   // consumer -> endpoint
using limit_atom = caf::atom_constant<caf::atom("limit")>;       // endpoint -> breaker
using resume_atom = caf::atom_constant<caf::atom("resume")>;     // endpoint -> itself
using retrying_atom = caf::atom_constant<caf::atom("retrying")>; // consumer -> endpoint
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;       // endpoint -> consumer
using sent_atom = caf::atom_constant<caf::atom("sent")>;         // transport -> consumer
using again_atom = caf::atom_constant<caf::atom("again")>;       // consumer -> itself
using scheduler_atom = caf::atom_constant<caf::atom("scheduler")>; // endpoint -> consumer
using held_atom = caf::atom_constant<caf::atom("held")>;         // transport -> scheduler
using returned_atom = caf::atom_constant<caf::atom("returned")>; // transport -> scheduler
using dependency_atom = caf::atom_constant<caf::atom("dependency")>; // gate -> endpoint, endpoint -> itself
using probe_atom = caf::atom_constant<caf::atom("probe")>;       // endpoint -> consumer
using clean_atom = caf::atom_constant<caf::atom("clean")>;       // inbox cleaner -> itself
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;       // outbox sweeper -> itself
using swept_atom = caf::atom_constant<caf::atom("swept")>;       // transport -> outbox sweeper
using cancelled_atom = caf::atom_constant<caf::atom("cancelled")>; // canceller -> endpoint

// The category of the errors the scheduler refuses a message with: the
// code is refusal_code() of the transport's bus::errc, the context its
// text, so that a consumer can tell "not now" from "never".
inline constexpr caf::atom_value scheduler_refusal = caf::atom("refused");
// Shifted by one: a caf::error with code 0 is no error at all.
constexpr std::uint8_t refusal_code(errc code) noexcept {
  return static_cast<std::uint8_t>(static_cast<int>(code) + 1);
}

// How an attempt at a delivery ended, from the endpoint's point of view:
// what to tell the transport and which counter moves.
enum class outcome : std::uint8_t {
  handled,       // ack
  dead_lettered, // a copy is on the error queue: ack
  discarded,     // ack
  skipped,       // a copy is on the skipped queue (or dropped by option): ack
  scheduled,     // the scheduler holds a copy for redelivery: ack
  requeue,       // not done and not safe anywhere else: back to the transport
  stale,         // came over a connection that is gone: the broker delivers it
                 // again, so nothing is settled; counted as requeued
  held,          // a dependency it needs is down: back to the endpoint's waiting
                 // line unsettled, no attempt spent (the endpoint holds it)
};

} // namespace bus::detail

// A delivery holds a shared envelope (not serializable by CAF, and never
// meant to leave the process inside a CAF message).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::delivery)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<bus::envelope>)
// Shared by the endpoint and the consumer of one delivery (in process only).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::detail::claim_ptr)
// How an asynchronous transport call ended (in process only).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bus::result<void>)
// An event prepared by one actor for another to raise (null: none).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const bus::bus_event>)
