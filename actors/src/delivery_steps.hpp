// The steps a consumer takes with one delivery, apart from the actor that
// sequences them: run a handler, release its outbox, park a message on the
// skipped or error queue. Each step turns failure into a value; none throws.
#pragma once

#include <exception>
#include <vector>

#include "atoms.hpp"
#include "bus/fault.hpp"
#include "bus/handler_context.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

// Runs a synchronous handler. Returns the exception it threw, of any type,
// or null on success.
[[nodiscard]] std::exception_ptr invoke(const handler_slot& slot, const void* message,
                                        handler_context& ctx) noexcept;

// Hands a successful attempt's outbox to the transport, in order. Stops at
// the first refusal and returns it.
[[nodiscard]] result<void> release(const endpoint_runtime& rt,
                                   std::vector<outgoing_message> outbox);

// Parks a message no handler accepts on the skipped queue (or drops it,
// by option). Returns requeue if the skipped queue refuses it.
[[nodiscard]] outcome skip(const endpoint_runtime& rt, const delivery& d);

// The fault facts of a failed attempt, with time, host and process filled in.
[[nodiscard]] fault_details make_fault(const endpoint_runtime& rt, const delivery& d,
                                       exception_info what, std::string reason,
                                       int immediate_retries);

// Puts a copy with fault headers on `queue` (empty: the endpoint's error
// queue). If the queue refuses it, tries minimal fault headers, then the
// endpoint's dead-letter file; only if all three fail does it return
// requeue, so the message is never lost and a refusal never loops quietly.
[[nodiscard]] outcome park_on_error_queue(const endpoint_runtime& rt, const delivery& d,
                                    const fault_details& fault, const std::string& queue = {});

// Raises fault<T> for a message that failed for good: to its fault
// address, else its response address, else published. Does nothing for a
// body that never became typed (no T to put in it) or a fault<T> itself.
void raise_fault(const endpoint_runtime& rt, const delivery& d, const message_body& body,
                 const fault_details& fault);

} // namespace bus::detail
