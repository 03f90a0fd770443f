// A transport that forwards every call to another: the base of the test
// doubles that change one behaviour of a real transport and keep the rest.
#pragma once

#include <string>

#include "bus/transport.hpp"

namespace bus::test {

class forwarding_transport : public bus::transport {
public:
  explicit forwarding_transport(bus::transport& inner) : inner_(inner) {}

  std::string_view name() const noexcept override { return inner_.name(); }
  transport_capabilities capabilities() const noexcept override { return inner_.capabilities(); }
  result<void> declare_queue(const std::string& q) override { return inner_.declare_queue(q); }
  bus::result<void> declare_queue_with(const std::string& q, const bus::queue_options& o) override {
    return inner_.declare_queue_with(q, o);
  }
  bus::result<void> check_queue(const std::string& q) const override {
    return inner_.check_queue(q);
  }
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
    return inner_.send_delayed(q, std::move(msg), delay);
  }
  result<void> publish(envelope msg) override { return inner_.publish(std::move(msg)); }
  bool settleable(std::uint64_t tag) const override { return inner_.settleable(tag); }
  result<void> ack(std::uint64_t tag) override { return inner_.ack(tag); }
  result<void> reject(std::uint64_t tag, bool requeue) override {
    return inner_.reject(tag, requeue);
  }

protected:
  bus::transport& inner_;
};

} // namespace bus::test
