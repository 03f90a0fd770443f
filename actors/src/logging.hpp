// The bus's loggers, one per concern and named as operators grep them. They
// are built from the sinks the user gives and never registered globally.
// Lines go out as text (the sinks' own pattern) or, with json, as one JSON
// object per line (json_log_formatter.hpp); lines about a message are
// written through log_line() (log_line.hpp), which cuts exception texts
// and carries the message's fields into the JSON object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

namespace bus::detail {

// An exception's text to go into a log line, cut at a limit only as the
// line is formatted: a line below its logger's level costs no copy of it.
// A view: it lives in the call that formats it (log.cut(e.what()) as an
// argument), no longer.
struct cut_text {
  std::string_view text;
  std::size_t limit;

  // The text cut as fault headers are cut (bus::truncate_utf8).
  [[nodiscard]] std::string str() const;
};

struct loggers {
  std::shared_ptr<spdlog::logger> endpoint;        // bus.endpoint: start, stop, consumer deaths
  std::shared_ptr<spdlog::logger> immediate_retry; // bus.immediate_retry (info)
  std::shared_ptr<spdlog::logger> delayed_retry;   // bus.delayed_retry (warn)
  std::shared_ptr<spdlog::logger> move_to_error;   // bus.move_to_error (error)
  std::shared_ptr<spdlog::logger> discard;         // bus.discard
  std::shared_ptr<spdlog::logger> skipped;         // bus.skipped
  std::shared_ptr<spdlog::logger> rate_limit;      // bus.rate_limit
  std::shared_ptr<spdlog::logger> retry_budget;    // bus.retry_budget (warn): a retry refused
  std::shared_ptr<spdlog::logger> request;         // bus.request: late or unknown replies
  std::shared_ptr<spdlog::logger> scheduled_send;  // bus.scheduled_send: send_at, defer
  std::shared_ptr<spdlog::logger> outbox;          // bus.outbox: duplicates, stored sends, the store
  bool json = false;             // one JSON object per line
  std::size_t text_limit = 4096; // exception texts in a line are cut to this (fault_text_limit)

  // Loggers writing to `sinks`; to standard error when there are none.
  // With `json`, the sinks' formatter is replaced by the JSON line format.
  static loggers make(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks, bool json = false,
                      std::size_t text_limit = 4096);

  // `text` to be cut at text_limit bytes, as fault headers are cut
  // (bus::truncate_utf8): for an exception's message or type in a log line.
  [[nodiscard]] cut_text cut(std::string_view text) const noexcept { return {text, text_limit}; }
};

// The log format: JSON if `chosen` (the builder's json_logs()), unless the
// environment variable BUS_LOG_FORMAT says otherwise ("text" or "json";
// unset or empty: `chosen` stands). Sets `json`; returns the mistake for
// any other value, for build() to report.
[[nodiscard]] std::string choose_log_format(bool chosen, bool& json);

} // namespace bus::detail

// Formats a cut_text: the text itself when it is within its limit (no
// copy), else the cut copy.
template <>
struct fmt::formatter<bus::detail::cut_text> : fmt::formatter<fmt::string_view> {
  template <class FormatContext>
  auto format(const bus::detail::cut_text& t, FormatContext& ctx) const -> decltype(ctx.out()) {
    if (t.text.size() <= t.limit)
      return fmt::formatter<fmt::string_view>::format(fmt::string_view(t.text.data(), t.text.size()),
                                                      ctx);
    auto cut = t.str();
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(cut.data(), cut.size()), ctx);
  }
};
