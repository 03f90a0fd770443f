// A message's deadline header: see bus/deadline.hpp.
#include "bus/deadline.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "bus/header_names.hpp"

namespace bus {

std::optional<time_point> expires_at(const envelope& message) {
  const auto text = message.headers.find(header::expires_at);
  if (!text || text->empty())
    return std::nullopt;
  std::int64_t ms = 0;
  const auto* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, ms);
  if (ec != std::errc{} || ptr != end)
    return std::nullopt;
  return checked_from_unix_ms(ms);
}

void set_expires_at(envelope& message, time_point at) {
  const auto ms = std::clamp<std::int64_t>(to_unix_ms(at), -max_unix_ms, max_unix_ms);
  message.headers.set(header::expires_at, std::to_string(ms));
}

bool expired(const envelope& message, time_point now) {
  const auto at = expires_at(message);
  return at && !(now < *at);
}

void inherit_deadline(envelope& sent, const envelope& handled) {
  const auto inherited = expires_at(handled);
  if (!inherited)
    return;
  const auto own = expires_at(sent);
  if (own && !(*inherited < *own))
    return;
  set_expires_at(sent, *inherited);
}

} // namespace bus
