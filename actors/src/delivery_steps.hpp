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

// Puts a copy with fault headers on the error queue. Returns requeue if the
// error queue refuses it, so the message is not lost.
[[nodiscard]] outcome move_to_error(const endpoint_runtime& rt, const delivery& d,
                                    const fault_details& fault);

} // namespace bus::detail
