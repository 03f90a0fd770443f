// The transport's logger: the sink from the settings, or stderr for warnings
// and errors when there is none. Never throws into the caller.
#pragma once

#include <string>

#include "bus/rabbitmq_settings.hpp"

namespace bus::detail {

class rabbitmq_logger {
public:
  explicit rabbitmq_logger(rabbitmq_log_sink sink) : sink_(std::move(sink)) {}

  void operator()(rabbitmq_log_level level, const std::string& line) const noexcept;

  void debug(const std::string& line) const noexcept { (*this)(rabbitmq_log_level::debug, line); }
  void info(const std::string& line) const noexcept { (*this)(rabbitmq_log_level::info, line); }
  void warn(const std::string& line) const noexcept { (*this)(rabbitmq_log_level::warn, line); }
  void error(const std::string& line) const noexcept { (*this)(rabbitmq_log_level::error, line); }

private:
  rabbitmq_log_sink sink_;
};

} // namespace bus::detail
