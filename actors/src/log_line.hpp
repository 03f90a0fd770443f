// The structured call site of a log line about a message: the text, plus
// the fields a log shipper indexes (message id, endpoint, attempt,
// exception type, reason). As text, the line is the formatted sentence; as
// JSON (loggers::json), an object with the sentence as "text" and each
// field that is set as its own member. Exception texts are cut by the
// caller with loggers::cut() before they go into the sentence.
//
// Never throws: a line that cannot be formatted is dropped.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <spdlog/logger.h>

#include "logging.hpp"

namespace bus::detail {

// The fields of a line; empty ones (attempt 0) are left out of the JSON.
struct log_fields {
  std::string_view message_id;
  std::string_view endpoint;
  int attempt = 0;
  std::string_view exception_type; // cut to the text limit in the JSON
  std::string_view reason;         // why the bus did what it did; cut likewise
};

// The payload for a JSON line: the mark, then {"text", fields...}.
[[nodiscard]] std::string json_payload(const loggers& logs, std::string_view text,
                                       const log_fields& fields);

template <class... Args>
void log_line(const loggers& logs, spdlog::logger& to, spdlog::level::level_enum level,
              const log_fields& fields, fmt::format_string<Args...> text,
              Args&&... args) noexcept {
  if (!to.should_log(level))
    return;
  try {
    auto line = fmt::format(text, std::forward<Args>(args)...);
    if (logs.json)
      line = json_payload(logs, line, fields);
    to.log(spdlog::source_loc{}, level, spdlog::string_view_t(line.data(), line.size()));
  } catch (...) {
    // Logging never throws into the bus.
  }
}

} // namespace bus::detail
