// The pieces a consumer's ending is made of, apart from the actor that
// sequences them: run a handler, build the copies that go to the error or
// skipped queue, build a fault<T> event, settle a delivery with the
// transport and count it. None sends anything on its own except settle(),
// none throws, and none waits: the consumer hands the copies to the
// transport's asynchronous calls.
#pragma once

#include <exception>
#include <optional>

#include "atoms.hpp"
#include "bus/caught_exception.hpp"
#include "bus/fault.hpp"
#include "bus/handler_context.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

// Runs a synchronous handler. Returns the exception it threw, of any type,
// looked into, or an empty one on success.
[[nodiscard]] caught_exception invoke(const handler_slot& slot, const void* message,
                                      handler_context& ctx) noexcept;

// The fault facts of a failed attempt, with time, host and process filled in.
[[nodiscard]] fault_details make_fault(const endpoint_runtime& rt, const delivery& d,
                                       exception_info what, std::string reason,
                                       int immediate_retries);

// What the endpoint's foreign_types mapping names `msg` (empty: nothing,
// or the endpoint has none). A mapping that throws names nothing, and
// `problem` (if given) says what it threw.
[[nodiscard]] std::string foreign_type(const endpoint_runtime& rt, const envelope& msg,
                                       std::string* problem = nullptr);

// Why no handler took a message (with what was looked at: the transport's
// note, the endpoint's mapping), and the copy for the skipped queue: the
// message with that reason in a header.
[[nodiscard]] std::string skipped_reason(const endpoint_runtime& rt, const envelope& msg);
[[nodiscard]] envelope skipped_copy(const endpoint_runtime& rt, const envelope& msg);

// The copy for the error queue with every fault header, cut to the bus's
// fault limits; and the smallest one that still says what happened, for an
// error queue that refused the first (a broker may refuse large headers).
[[nodiscard]] envelope error_queue_copy(const endpoint_runtime& rt, const envelope& msg,
                                        const fault_details& fault);
[[nodiscard]] envelope minimal_error_queue_copy(const endpoint_runtime& rt, const envelope& msg,
                                                const fault_details& fault);

// On an endpoint that speaks MassTransit (endpoint_builder::masstransit):
// `out`, a message its handler sends while handling `handled`, is marked
// to go in MassTransit's envelope (masstransit::header::write_as) if its
// type has a MassTransit name; a reply to a MassTransit request carries
// the request's id back. Others are left as they are.
void speak_masstransit(const masstransit::message_names& names, const envelope& handled,
                       outgoing_message& out);

// On an endpoint that speaks NServiceBus (endpoint_builder::nservicebus):
// `out`, a message its handler sends while handling `handled`, carries
// NServiceBus's headers (nservicebus::with_headers) if its type has an
// NServiceBus name, as a send, a publish (empty queue; the transport
// publishes it to the type's exchange) or a reply (to the handled
// message's reply address). Others are left as they are.
void speak_nservicebus(const endpoint_runtime& rt, const nservicebus::message_names& names,
                       const envelope& handled, outgoing_message& out);

// fault<T> for a message that failed for good, addressed to its fault
// address, else its response address, else published (empty queue); for
// one that came in MassTransit's envelope to an endpoint that speaks it,
// MassTransit's Fault<T> instead, in its envelope. Nothing for a body that
// never became typed (no T to put in it), a fault<T> itself, or when the
// endpoint raises no faults.
[[nodiscard]] std::optional<outgoing_message> fault_event(const endpoint_runtime& rt,
                                                          const envelope& msg,
                                                          const message_body& body,
                                                          const fault_details& fault);

// Sends one message of an outbox through the transport's asynchronous
// calls: published when its queue is empty, and a deferred one (ctx.defer)
// handed to the bus's scheduled sends, else the transport's own delayed
// delivery. `done` is called once, as the transport's completions are.
void send_outgoing(const endpoint_runtime& rt, outgoing_message out, completion done);

// Tells the transport what became of a delivery (ack, or back to its queue
// for requeue) and counts it. The one place a delivery is settled: by its
// consumer as it ends it, by the endpoint for what no consumer ends (a stop).
void settle(const endpoint_runtime& rt, const delivery& d, outcome result);

} // namespace bus::detail
