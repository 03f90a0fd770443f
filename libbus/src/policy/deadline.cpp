// The policy's side of deadlines: see bus/policy/deadline.hpp.
#include "bus/policy/deadline.hpp"

#include "bus/policy/error_context.hpp"

namespace bus {

std::string_view to_string(expired_action a) noexcept {
  switch (a) {
    case expired_action::discard: return "discard";
    case expired_action::dead_letter: return "dead_letter";
  }
  return "discard";
}

bool parse_expired_action(std::string_view text, expired_action& out) noexcept {
  if (text == "discard")
    out = expired_action::discard;
  else if (text == "dead_letter")
    out = expired_action::dead_letter;
  else
    return false;
  return true;
}

namespace {

// later - earlier in milliseconds, zero when later is not later, saturating
// at duration::max(): exact for any two time points (as decide() measures).
duration span(time_point earlier, time_point later) noexcept {
  if (!(earlier < later))
    return duration::zero();
  using ticks = std::chrono::duration<std::uint64_t, time_point::period>;
  using unsigned_ms = std::chrono::duration<std::uint64_t, std::milli>;
  const ticks t(static_cast<std::uint64_t>(later.time_since_epoch().count())
                - static_cast<std::uint64_t>(earlier.time_since_epoch().count()));
  const auto ms = std::chrono::duration_cast<unsigned_ms>(t).count();
  constexpr auto max_ms = static_cast<std::uint64_t>(duration::max().count());
  return duration(static_cast<duration::rep>(ms < max_ms ? ms : max_ms));
}

} // namespace

std::optional<std::string> too_late(const error_context& context, duration limit,
                                    duration delay) {
  if (delay < duration::zero())
    delay = duration::zero();
  if (context.expires_at && delay >= span(context.now, *context.expires_at))
    return "the message expires before a retry after " + to_hms(delay) + " would run";
  const auto elapsed = span(context.first_failure, context.now);
  if (elapsed < limit && delay > limit - elapsed)
    return "a retry after " + to_hms(delay) + " would come after the retry time limit of "
           + to_hms(limit) + " since the first failure";
  return std::nullopt;
}

} // namespace bus
