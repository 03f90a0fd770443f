// A transport that forwards to another and claims delayed delivery, as a
// broker does, with send_delayed() failing on demand: for "not now"
// (errc::transport_failure, a broker out of reach) or "never"
// (errc::invalid_configuration, a delay the broker cannot hold). A delay it
// accepts is not waited for: the message goes to its queue at once.
#pragma once

#include <string>

#include "bus/transport.hpp"

namespace bus::test {

class delaying_transport final : public bus::transport {
public:
  explicit delaying_transport(bus::transport& inner) : inner_(inner) {}

  int refusals_left = 0;                       // send_delayed calls still to refuse
  errc refusal = errc::transport_failure;      // and with what
  int refused = 0;
  int accepted = 0;

  std::string_view name() const noexcept override { return "delaying"; }
  transport_capabilities capabilities() const noexcept override {
    auto c = inner_.capabilities();
    c.delayed_delivery = true;
    return c;
  }
  result<void> declare_queue(const std::string& q) override { return inner_.declare_queue(q); }
  result<void> subscribe(const std::string& q, const std::string& type) override {
    return inner_.subscribe(q, type);
  }
  result<void> consume(const std::string& q, std::size_t n, delivery_handler h) override {
    return inner_.consume(q, n, std::move(h));
  }
  void cancel(const std::string& q) override { inner_.cancel(q); }
  result<void> send(const std::string& q, envelope msg) override {
    return inner_.send(q, std::move(msg));
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
  result<void> publish(envelope msg) override { return inner_.publish(std::move(msg)); }
  result<void> ack(std::uint64_t tag) override { return inner_.ack(tag); }
  result<void> reject(std::uint64_t tag, bool requeue) override {
    return inner_.reject(tag, requeue);
  }

private:
  bus::transport& inner_;
};

} // namespace bus::test
