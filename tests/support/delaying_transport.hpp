// A transport that forwards to another and claims delayed delivery, as a
// broker does, with send_delayed() failing on demand: for "not now"
// (errc::transport_failure, a broker out of reach) or "never"
// (errc::invalid_configuration, a delay the broker cannot hold). A delay it
// accepts is not waited for: the message goes to its queue at once.
#pragma once

#include <string>

#include "support/forwarding_transport.hpp"

namespace bus::test {

class delaying_transport final : public forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;

  int refusals_left = 0;                  // send_delayed calls still to refuse
  errc refusal = errc::transport_failure; // and with what
  int refused = 0;
  int accepted = 0;

  std::string_view name() const noexcept override { return "delaying"; }
  transport_capabilities capabilities() const noexcept override {
    auto c = inner_.capabilities();
    c.delayed_delivery = true;
    return c;
  }
  result<void> send_delayed(const std::string& q, envelope msg, duration delay) override {
    if (refusals_left > 0) {
      --refusals_left;
      ++refused;
      return error{refusal, "the broker refuses (refusal " + std::to_string(refused) + ")"};
    }
    ++accepted;
    return inner_.send(q, std::move(msg));
  }
};

} // namespace bus::test
