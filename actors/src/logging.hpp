// The bus's loggers, one per concern and named as operators grep them. They
// are built from the sinks the user gives and never registered globally.
#pragma once

#include <memory>
#include <vector>

#include <spdlog/logger.h>

namespace bus::detail {

struct loggers {
  std::shared_ptr<spdlog::logger> endpoint;        // bus.endpoint: start, stop, consumer deaths
  std::shared_ptr<spdlog::logger> immediate_retry; // bus.immediate_retry (info)
  std::shared_ptr<spdlog::logger> delayed_retry;   // bus.delayed_retry (warn)
  std::shared_ptr<spdlog::logger> move_to_error;   // bus.move_to_error (error)
  std::shared_ptr<spdlog::logger> discard;         // bus.discard
  std::shared_ptr<spdlog::logger> skipped;         // bus.skipped
  std::shared_ptr<spdlog::logger> rate_limit;      // bus.rate_limit
  std::shared_ptr<spdlog::logger> request;         // bus.request: late or unknown replies
  std::shared_ptr<spdlog::logger> scheduled_send;  // bus.scheduled_send: send_at, defer

  // Loggers writing to `sinks`; to standard error when there are none.
  static loggers make(std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks);
};

} // namespace bus::detail
