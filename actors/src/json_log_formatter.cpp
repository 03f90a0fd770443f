#include "json_log_formatter.hpp"

#include <nlohmann/json.hpp>

#include "bus/time.hpp"

namespace bus::detail {

namespace {

void append(spdlog::memory_buf_t& dest, std::string_view text) {
  dest.append(text.data(), text.data() + text.size());
}

std::string quoted(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace);
}

} // namespace

void json_log_formatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  auto time = std::chrono::time_point_cast<time_point::duration>(msg.time);
  append(dest, "{\"time\":\"");
  append(dest, to_iso8601(time));
  append(dest, "\",\"level\":");
  auto level = spdlog::level::to_string_view(msg.level);
  append(dest, quoted(std::string_view(level.data(), level.size())));
  append(dest, ",\"logger\":");
  append(dest, quoted(std::string_view(msg.logger_name.data(), msg.logger_name.size())));
  std::string_view payload(msg.payload.data(), msg.payload.size());
  if (payload.size() >= 2 && payload[0] == json_payload_mark && payload[1] == '{') {
    // log_line()'s object: its members follow ours ("text" always among them).
    append(dest, ",");
    append(dest, payload.substr(2));
  } else {
    append(dest, ",\"text\":");
    append(dest, quoted(payload));
    append(dest, "}");
  }
  append(dest, "\n");
}

std::unique_ptr<spdlog::formatter> json_log_formatter::clone() const {
  return std::make_unique<json_log_formatter>();
}

} // namespace bus::detail
