// The bus's vocabulary for time. Wall-clock time points (they travel in
// headers between processes) and millisecond durations (every delay a user
// configures). Nothing here reads a clock: callers pass `now` in.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <optional>

namespace bus {

using duration = std::chrono::milliseconds;
using time_point = std::chrono::system_clock::time_point;

// Milliseconds since the Unix epoch, the form a time takes in a header.
[[nodiscard]] std::int64_t to_unix_ms(time_point t) noexcept;
// `ms` must be within max_unix_ms of the epoch; from untrusted input use
// checked_from_unix_ms.
[[nodiscard]] time_point from_unix_ms(std::int64_t ms) noexcept;

// How far from the epoch (either way) a time a message carries may be: to
// the year 2200. time_point counts nanoseconds in 64 bits, which ends in
// 2262; anything further would overflow.
inline constexpr std::int64_t max_unix_ms = 7'258'118'400'000;

// The time point, or nothing if `ms` is out of range.
[[nodiscard]] std::optional<time_point> checked_from_unix_ms(std::int64_t ms) noexcept;

// "2026-11-22T10:15:30.123Z" (UTC), for logs and headers read by people.
[[nodiscard]] std::string to_iso8601(time_point t);

// The time to_iso8601() wrote, read back from text that may come from
// anywhere (a fault header): "YYYY-MM-DDTHH:MM:SSZ" with an optional
// fraction of 1 to 9 digits before the Z, read to the millisecond. Nothing
// for any other form, a date or time of day that does not exist, or a time
// outside [the epoch, max_unix_ms]. Never overflows.
[[nodiscard]] std::optional<time_point> from_iso8601(std::string_view text) noexcept;

// "HH:MM:SS" or "HH:MM:SS.mmm" when there are milliseconds, as in
// NServiceBus's retry log lines ("after a delay of 00:00:10").
[[nodiscard]] std::string to_hms(duration d);

} // namespace bus
