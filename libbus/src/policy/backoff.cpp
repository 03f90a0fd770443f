#include "bus/policy/backoff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace bus {

std::string_view to_string(backoff kind) noexcept {
  switch (kind) {
    case backoff::constant:
      return "constant";
    case backoff::linear:
      return "linear";
    case backoff::exponential:
      return "exponential";
  }
  return "unknown";
}

duration backoff_delay(backoff kind, duration base, int attempt) noexcept {
  using rep = duration::rep;
  constexpr rep max = std::numeric_limits<rep>::max();
  const rep b = std::max<rep>(base.count(), 0);
  const rep n = std::max(attempt, 1);
  if (b == 0)
    return duration::zero();
  switch (kind) {
    case backoff::constant:
      return duration(b);
    case backoff::linear:
      return duration(b > max / n ? max : b * n);
    case backoff::exponential: {
      const rep shift = n - 1;
      // 2^shift * b overflows when b exceeds max >> shift (and always from
      // shift 63 on, where max >> shift is 0 for any positive b).
      if (shift >= std::numeric_limits<rep>::digits || b > (max >> shift))
        return duration(max);
      return duration(b << shift);
    }
  }
  return duration(b);
}

duration apply_jitter(duration nominal, random_source rng) {
  if (nominal <= duration::zero())
    return nominal;
  const double u = rng.unit();
  const double offset = (2.0 * u - 1.0) * jitter_fraction * static_cast<double>(nominal.count());
  const auto shifted = static_cast<double>(nominal.count()) + std::round(offset);
  // Within 20 % of a representable delay, so only the very top of the range
  // can exceed it.
  if (shifted >= static_cast<double>(std::numeric_limits<duration::rep>::max()))
    return duration::max();
  return duration(static_cast<duration::rep>(shifted));
}

} // namespace bus
