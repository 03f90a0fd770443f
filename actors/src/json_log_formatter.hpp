// The JSON line format of the bus's logs, for log shippers: one object per
// line, {"time", "level", "logger", then the line's own fields}. A line
// written through log_line() carries its fields (text, message_id,
// endpoint, attempt, exception_type, reason) as a JSON object marked by a
// leading record separator (0x1e); any other line becomes {"text": ...}.
// Escaping is nlohmann-json's, with invalid UTF-8 replaced, so every line
// is valid JSON whatever an exception's message holds.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace bus::detail {

// Marks a payload that is a JSON object of fields, not text.
inline constexpr char json_payload_mark = '\x1e';

class json_log_formatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override;
};

} // namespace bus::detail
