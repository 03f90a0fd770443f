// A transport that forwards to another but refuses sends to one queue:
// always, or when the message's headers exceed a size, as a broker refuses
// oversized headers (a refusal for good: errc::malformed_message), or for
// now while the queue is out of reach (errc::transport_failure). For
// testing what the bus does when a queue says no.
#pragma once

#include <string>

#include "support/forwarding_transport.hpp"

namespace bus::test {

class refusing_transport final : public forwarding_transport {
public:
  // Refuses sends to `queue` whose headers (names and values) exceed
  // `max_header_bytes`; pass 0 to refuse every send to it.
  refusing_transport(bus::transport& inner, std::string queue, std::size_t max_header_bytes)
    : forwarding_transport(inner), queue_(std::move(queue)), max_header_bytes_(max_header_bytes) {}

  std::size_t refused = 0;
  int out_of_reach = 0; // sends still to refuse with transport_failure, before any other check

  std::string_view name() const noexcept override { return "refusing"; }
  result<void> send(const std::string& q, envelope msg) override {
    if (q == queue_ && out_of_reach > 0) {
      --out_of_reach;
      ++refused;
      return error{errc::transport_failure, "queue '" + q + "' is out of reach"};
    }
    if (q == queue_) {
      std::size_t bytes = 0;
      for (const auto& [name, value] : msg.headers)
        bytes += name.size() + value.size();
      if (max_header_bytes_ == 0 || bytes > max_header_bytes_) {
        ++refused;
        return error{errc::malformed_message, "queue '" + q + "' refuses this message (headers of "
                                                + std::to_string(bytes) + " bytes)"};
      }
    }
    return inner_.send(q, std::move(msg));
  }

private:
  std::string queue_;
  std::size_t max_header_bytes_;
};

} // namespace bus::test
