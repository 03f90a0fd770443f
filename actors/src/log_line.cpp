#include "log_line.hpp"

#include <nlohmann/json.hpp>

#include "json_log_formatter.hpp"

namespace bus::detail {

std::string json_payload(const loggers& logs, std::string_view text, const log_fields& fields) {
  nlohmann::ordered_json line;
  line["text"] = std::string(text);
  if (!fields.message_id.empty())
    line["message_id"] = std::string(fields.message_id);
  if (!fields.endpoint.empty())
    line["endpoint"] = std::string(fields.endpoint);
  if (fields.attempt > 0)
    line["attempt"] = fields.attempt;
  if (!fields.exception_type.empty())
    line["exception_type"] = logs.cut(fields.exception_type).str();
  if (!fields.reason.empty())
    line["reason"] = logs.cut(fields.reason).str();
  std::string out(1, json_payload_mark);
  out += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

} // namespace bus::detail
