#include "log.hpp"

#include <cstdio>

namespace bus::detail {

void rabbitmq_logger::operator()(rabbitmq_log_level level, const std::string& line) const noexcept {
  try {
    if (sink_) {
      sink_(level, line);
      return;
    }
    if (level < rabbitmq_log_level::warn)
      return;
    // One fputs per line: stdio locks the stream, so lines of the two I/O
    // threads never interleave mid-line.
    std::string out = std::string("[bus.rabbitmq] ")
                      + (level == rabbitmq_log_level::warn ? "warning: " : "error: ") + line + "\n";
    std::fputs(out.c_str(), stderr);
  } catch (...) {
    // A sink that throws loses its line, nothing else.
  }
}

} // namespace bus::detail
