#include "logging.hpp"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "bus/fault.hpp"
#include "json_log_formatter.hpp"

namespace bus::detail {

loggers loggers::make(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks, bool json,
                      std::size_t text_limit) {
  if (sinks.empty())
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto make_one = [&](const char* name) {
    auto log = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
    // A failing sink must never throw into a handler or an actor.
    log->set_error_handler([](const std::string&) {});
    log->set_level(spdlog::level::info);
    if (json)
      log->set_formatter(std::make_unique<json_log_formatter>());
    return log;
  };
  loggers out{make_one("bus.endpoint"),  make_one("bus.immediate_retry"),
              make_one("bus.delayed_retry"), make_one("bus.move_to_error"),
              make_one("bus.discard"),   make_one("bus.skipped"),
              make_one("bus.rate_limit"), make_one("bus.retry_budget"),
              make_one("bus.request"),    make_one("bus.scheduled_send"),
              make_one("bus.outbox")};
  out.json = json;
  out.text_limit = text_limit;
  return out;
}

std::string choose_log_format(bool chosen, bool& json) {
  json = chosen;
  const char* format = std::getenv("BUS_LOG_FORMAT");
  if (format == nullptr || *format == '\0')
    return {};
  std::string_view value(format);
  if (value == "json" || value == "text") {
    json = value == "json";
    return {};
  }
  return "the environment variable BUS_LOG_FORMAT is '" + truncate_utf8(std::string(value), 64)
         + "': it must be 'text' or 'json'";
}

std::string cut_text::str() const {
  // Copies at most limit + 1 bytes of a long text, then cuts as the fault
  // headers are cut (at a character boundary, with a marker).
  return truncate_utf8(std::string(text.substr(0, limit + 1)), limit);
}

} // namespace bus::detail
