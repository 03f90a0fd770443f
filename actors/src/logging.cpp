#include "logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace bus::detail {

loggers loggers::make(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks) {
  if (sinks.empty())
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto make_one = [&](const char* name) {
    auto log = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
    // A failing sink must never throw into a handler or an actor.
    log->set_error_handler([](const std::string&) {});
    log->set_level(spdlog::level::info);
    return log;
  };
  return loggers{make_one("bus.endpoint"),  make_one("bus.immediate_retry"),
                 make_one("bus.delayed_retry"), make_one("bus.move_to_error"),
                 make_one("bus.discard"),   make_one("bus.skipped"),
                 make_one("bus.rate_limit"), make_one("bus.request"),
                 make_one("bus.scheduled_send")};
}

} // namespace bus::detail
