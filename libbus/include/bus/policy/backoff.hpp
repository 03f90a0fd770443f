// Backoff: how the delay grows from one attempt to the next, and the jitter
// that keeps many failing messages from retrying in lockstep. Arithmetic on
// bus::duration only; the random draw comes from the caller.
#pragma once

#include <string_view>

#include "bus/policy/random.hpp"
#include "bus/time.hpp"

namespace bus {

enum class backoff {
  constant,    // base, every time
  linear,      // base * attempt
  exponential, // base * 2^(attempt - 1), the default
};

[[nodiscard]] std::string_view to_string(backoff kind) noexcept;

// The delay before retry number `attempt` (1 = the first retry) under
// `kind`, before jitter and cap. Never overflows: a product beyond the range
// of bus::duration saturates at duration::max(). A negative base counts as
// zero and an attempt below 1 as 1 (validate() refuses both in a
// configuration; this function stays total so decide() never misbehaves).
[[nodiscard]] duration backoff_delay(backoff kind, duration base, int attempt) noexcept;

// How far jitter may move a delay either way, as a fraction of the delay.
inline constexpr double jitter_fraction = 0.2;

// Jitter: `nominal` moved by a uniform offset of at most 20 % either way,
// rounded to the nearest millisecond:
//
//     jittered = nominal + round((2u - 1) * 0.2 * nominal),  u = rng.unit() in [0, 1)
//
// so 200 ms becomes a value in [160 ms, 240 ms]. Symmetric around the nominal
// delay, so the mean schedule is the one the user wrote. One draw per call;
// the draw 2^63 (u = 0.5) returns `nominal` exactly, which is how explain()
// shows a plan with jitter off. Zero and negative delays are returned as they
// are. The caller applies the maximum delay afterwards.
[[nodiscard]] duration apply_jitter(duration nominal, random_source rng);

} // namespace bus
