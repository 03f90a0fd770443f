// The recoverability decision as a value: what happens to a message whose
// handler failed. A small closed set, handled with std::visit and no
// default branch, so a new action breaks the build wherever it must be.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "bus/time.hpp"

namespace bus {

// Run the handler again in process after `delay`; the slot stays held.
struct immediate_retry {
  duration delay{};
  // The delay asked for, when it was longer than max_scheduled_delay and
  // decide() cut it to that (a custom policy's decision, or rules never
  // validated); empty otherwise. The runtime logs a warning when it is set.
  std::optional<duration> clamped_from{};
};

// Hand the message to the scheduler, to come back through the endpoint's
// input queue after `delay` with its delivery count raised.
struct delayed_retry {
  duration delay{};
  // As immediate_retry::clamped_from.
  std::optional<duration> clamped_from{};
};

// Send a copy with fault headers to the error queue and acknowledge the
// original. `reason` says why, for the fault-reason header and the log.
struct move_to_error {
  std::string reason;
  std::string queue; // empty: the endpoint's own error queue
};

// Acknowledge and drop, with a log line; no error queue.
struct discard {
  std::string reason;
};

using action = std::variant<immediate_retry, delayed_retry, move_to_error, discard>;

// Equal when the kind and every field are equal.
[[nodiscard]] bool operator==(const immediate_retry& a, const immediate_retry& b) noexcept;
[[nodiscard]] bool operator==(const delayed_retry& a, const delayed_retry& b) noexcept;
[[nodiscard]] bool operator==(const move_to_error& a, const move_to_error& b) noexcept;
[[nodiscard]] bool operator==(const discard& a, const discard& b) noexcept;
[[nodiscard]] bool operator!=(const immediate_retry& a, const immediate_retry& b) noexcept;
[[nodiscard]] bool operator!=(const delayed_retry& a, const delayed_retry& b) noexcept;
[[nodiscard]] bool operator!=(const move_to_error& a, const move_to_error& b) noexcept;
[[nodiscard]] bool operator!=(const discard& a, const discard& b) noexcept;

// The action's name as the loggers spell it: "immediate_retry",
// "delayed_retry", "move_to_error", "discard" (bus.<name>).
[[nodiscard]] std::string_view name(const action& a) noexcept;

// One line for people, in NServiceBus's words: "immediate retry after
// 00:00:00.200", "delayed retry after 00:05:00" (with "(clamped from
// 17520:00:00)" after a clamped delay), "move to the error queue:
// <reason>", "move to error queue 'audit_errors': <reason>", "discard:
// <reason>".
[[nodiscard]] std::string describe(const action& a);

// describe(), for test frameworks and log streams.
std::ostream& operator<<(std::ostream& out, const immediate_retry& a);
std::ostream& operator<<(std::ostream& out, const delayed_retry& a);
std::ostream& operator<<(std::ostream& out, const move_to_error& a);
std::ostream& operator<<(std::ostream& out, const discard& a);
std::ostream& operator<<(std::ostream& out, const action& a);

} // namespace bus
