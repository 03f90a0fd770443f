// ServiceControl's side of NServiceBus's convention (issue 25), the pure
// part: the headers it reads from an error queue, so that a company's
// ServicePulse lists and retries a C++ endpoint's failures
// (bus_builder::servicecontrol_error_headers), and what a retry from it
// looks like when it comes back. Facts from ServiceControl 5 and 6 and
// NServiceBus 8.2: tests/interop/golden/nservicebus_message.md, section 6.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "bus/envelope.hpp"
#include "bus/fault.hpp"
#include "bus/outgoing_message.hpp"

namespace bus::servicecontrol {

namespace header {
// Written on the error-queue copy. FailedQ is the one ServiceControl
// requires: the queue a retry is sent back to.
inline constexpr std::string_view failed_queue = "NServiceBus.FailedQ";
inline constexpr std::string_view time_of_failure = "NServiceBus.TimeOfFailure";
inline constexpr std::string_view processing_endpoint = "NServiceBus.ProcessingEndpoint";
inline constexpr std::string_view processing_machine = "NServiceBus.ProcessingMachine";
inline constexpr std::string_view host_display_name = "$.diagnostics.hostdisplayname";
inline constexpr std::string_view exception_type = "NServiceBus.ExceptionInfo.ExceptionType";
inline constexpr std::string_view exception_message = "NServiceBus.ExceptionInfo.Message";
inline constexpr std::string_view exception_source = "NServiceBus.ExceptionInfo.Source";
inline constexpr std::string_view exception_stack_trace = "NServiceBus.ExceptionInfo.StackTrace";
// The counters: redeliveries (NServiceBus's delayed retries) and the
// immediate retries of the last delivery.
inline constexpr std::string_view delayed_retries = "NServiceBus.Retries";
inline constexpr std::string_view immediate_retries = "NServiceBus.FLRetries";
// On a message ServicePulse retries.
inline constexpr std::string_view retry_id = "ServiceControl.Retry.UniqueMessageId";
inline constexpr std::string_view retry_acknowledgement_queue =
    "ServiceControl.Retry.AcknowledgementQueue";
// On the acknowledgement of a retry that was handled.
inline constexpr std::string_view retry_successful = "ServiceControl.Retry.Successful";
inline constexpr std::string_view control_message = "NServiceBus.ControlMessage";
} // namespace header

// The message type of a retry's acknowledgement, for the bus's own header.
inline constexpr std::string_view acknowledgement_type = "servicecontrol.retry_acknowledgement";

// `failed` (the bus's error-queue copy, with_fault_headers already applied)
// with the headers ServiceControl reads, from `fault`. What an NServiceBus
// sender set stays (its id, enclosed types, intent, conversation, time
// sent); a message of the bus's own gets them from its envelope (its
// conversation is its correlation id, else its own id). Texts are
// cut to `limits`. The stack trace is "type: message", what .NET's
// Exception.ToString() starts with: C++17 has no portable stack trace.
[[nodiscard]] envelope with_failed_headers(envelope failed, const fault_details& fault,
                                           const fault_limits& limits = {});

// A message ServicePulse retried from the error queue: it carries
// ServiceControl.Retry.UniqueMessageId and the fault facts of the bus's
// error-queue copy (ServiceControl removes only its own NServiceBus.*
// failure headers). It starts over, as a replay does: `received` without
// the fault facts, the delivery and attempt counts (kept_on_replay), its
// delivery count 0. Nothing for any other message, the bus's own
// redeliveries of a retried message among them (they carry no fault facts),
// and a failure held back (bus-fault-pending): its fate is decided.
[[nodiscard]] std::optional<envelope> as_fresh_attempt(const envelope& received);

// What NServiceBus sends once a message ServicePulse retried was handled,
// so that ServicePulse shows the retry as resolved: a control message to
// its ServiceControl.Retry.AcknowledgementQueue with
// ServiceControl.Retry.Successful (`now`), the retry's unique id,
// NServiceBus.ControlMessage "True", and an empty body; `id` is its
// message id, `source` the endpoint. Nothing for a message without both
// retry headers.
[[nodiscard]] std::optional<outgoing_message>
retry_acknowledgement(const envelope& handled, time_point now, std::string id, std::string source);

} // namespace bus::servicecontrol
