// What a message carries across redeliveries that the policy's limits
// need: failed attempts before this delivery and when it first failed,
// read from headers that may come from outside the process.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

#include "bus/header_names.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

struct history {
  int failed_attempts = 0;    // in earlier deliveries
  time_point first_failure{}; // now, if it never failed before
};

[[nodiscard]] inline history read_history(const endpoint_runtime& rt, const envelope& msg) {
  auto number = [&](std::string_view name) -> std::optional<std::int64_t> {
    auto text = msg.headers.find(name);
    std::int64_t value{};
    if (!text || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc())
      return std::nullopt;
    return value;
  };
  history h;
  h.failed_attempts = static_cast<int>(number(header::failed_attempts).value_or(0));
  auto ms = number(header::first_failure_at);
  auto at = ms ? checked_from_unix_ms(*ms) : std::nullopt;
  h.first_failure = at ? *at : rt.now();
  return h;
}

} // namespace bus::detail
