// Deadlines in the policy (NServiceBus's time to be received, MassTransit's
// time to live): what happens to a message that expired before it could
// run, and the check that keeps a retry from being scheduled to fire after
// the message's expiry or after the retry time limit. Pure: the times come
// in the error context.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bus/time.hpp"

namespace bus {

struct error_context;

// What becomes of a message found expired before an attempt: it is never
// run. Discard is the default, as NServiceBus and MassTransit's brokers do
// with an expired message; dead_letter keeps it on the error queue.
enum class expired_action : std::uint8_t { discard, dead_letter };

[[nodiscard]] std::string_view to_string(expired_action a) noexcept;
// "discard", "dead_letter"; false for anything else.
[[nodiscard]] bool parse_expired_action(std::string_view text, expired_action& out) noexcept;

// The fault reason of a message dead-lettered because it expired.
inline constexpr std::string_view expired_reason = "expired";

// Why a retry that fires `delay` after context.now would come too late,
// or nothing if it is in time: at or after context.expires_at (when set;
// the message is expired then and would not run), or after `limit` since
// context.first_failure (at the limit itself the attempt still runs, as it
// always did). Never overflows.
[[nodiscard]] std::optional<std::string> too_late(const error_context& context, duration limit,
                                                  duration delay);

} // namespace bus
