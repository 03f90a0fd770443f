// The names of every header the bus writes. One prefix, so operators can
// tell the bus's headers from their own at a glance.
#pragma once

#include <string_view>

namespace bus::header {

inline constexpr std::string_view prefix = "bus-";

inline constexpr std::string_view message_id = "bus-message-id";
inline constexpr std::string_view message_type = "bus-message-type";
inline constexpr std::string_view correlation_id = "bus-correlation-id";
inline constexpr std::string_view sent_at = "bus-sent-at";
inline constexpr std::string_view source_address = "bus-source-address";
inline constexpr std::string_view destination_address = "bus-destination-address";
inline constexpr std::string_view response_address = "bus-response-address";
inline constexpr std::string_view fault_address = "bus-fault-address";
// Redeliveries performed so far (0 on the first delivery).
inline constexpr std::string_view delivery_count = "bus-delivery-count";
// Carried across redeliveries, so a rule's time limit and attempt budget
// see the whole history of a message: when it first failed (Unix ms) and
// how many attempts failed in all.
inline constexpr std::string_view first_failure_at = "bus-first-failure-at";
inline constexpr std::string_view failed_attempts = "bus-failed-attempts";

// Written on a copy that goes to the error queue.
inline constexpr std::string_view fault_exception_type = "bus-fault-exception-type";
inline constexpr std::string_view fault_message = "bus-fault-message";
inline constexpr std::string_view fault_at = "bus-fault-at";
inline constexpr std::string_view fault_host = "bus-fault-host";
inline constexpr std::string_view fault_process = "bus-fault-process";
inline constexpr std::string_view fault_endpoint = "bus-fault-endpoint";
inline constexpr std::string_view fault_original_address = "bus-fault-original-address";
inline constexpr std::string_view fault_immediate_retries = "bus-fault-immediate-retries";
inline constexpr std::string_view fault_delivery_count = "bus-fault-delivery-count";
inline constexpr std::string_view fault_reason = "bus-fault-reason";
// On a failed message the bus holds back because no error queue or file
// would take it: its fate is decided, it goes to the error queue when it
// comes back, without running its handler again.
inline constexpr std::string_view fault_pending = "bus-fault-pending";

// When the message expires (Unix ms): it is not run after that
// (NServiceBus's time to be received, MassTransit's time to live).
inline constexpr std::string_view expires_at = "bus-expires-at";

// Written on a copy that goes to the skipped queue.
inline constexpr std::string_view skipped_reason = "bus-skipped-reason";

} // namespace bus::header
