#include "bus/error.hpp"

namespace bus {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_configuration: return "invalid_configuration";
    case errc::unknown_message_type: return "unknown_message_type";
    case errc::malformed_message: return "malformed_message";
    case errc::unknown_queue: return "unknown_queue";
    case errc::transport_failure: return "transport_failure";
    case errc::not_running: return "not_running";
    case errc::duplicate: return "duplicate";
    case errc::timeout: return "timeout";
    case errc::request_failed: return "request_failed";
    case errc::store_failure: return "store_failure";
  }
  return "unknown_error";
}

std::string to_string(const error& err) {
  std::string out(to_string(err.code));
  out += ": ";
  out += err.message;
  return out;
}

} // namespace bus
