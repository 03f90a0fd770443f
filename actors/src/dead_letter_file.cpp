#include "dead_letter_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bus/wire.hpp"

namespace bus::detail {

result<std::string> append_dead_letter(const std::string& directory, const std::string& endpoint,
                                       const envelope& msg, const fault_details& fault) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec)
    return error{errc::transport_failure,
                 "cannot create the dead-letter directory '" + directory + "': " + ec.message()};
  auto path = (fs::path(directory) / (endpoint + ".dead-letters.jsonl")).string();
  auto wire = to_wire(with_fault_headers(msg, fault));
  nlohmann::json line;
  if (wire) {
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [name, value] : wire->headers)
      headers[name] = value;
    line = {{"headers", headers}, {"body", wire->body}};
  } else {
    // Even the body cannot be serialized: keep what identifies it.
    line = {{"message_id", msg.message_id},
            {"message_type", msg.message_type},
            {"body_error", wire.error().message}};
  }
  std::ofstream out(path, std::ios::app);
  out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.flush();
  if (!out)
    return error{errc::transport_failure,
                 "cannot append to '" + path + "': " + std::strerror(errno)};
  return path;
}

} // namespace bus::detail
