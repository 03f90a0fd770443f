// The RabbitMQ node of the RabbitMQ cases, started only while they run: a
// node on the same two cores takes CPU from the in-memory runs (its boot
// work, its schedulers' busy waiting), which slowed raw CAF and the bus
// alike by a quarter to a third when it ran beside them.
#pragma once

#include <string>

namespace bench {

class throwaway_broker {
public:
  // Starts a node in `dir` with `script` (scripts/rabbitmq-test-broker.sh),
  // its output in `log`. Check url(): empty if it did not start.
  throwaway_broker(std::string script, std::string dir, const std::string& log);
  ~throwaway_broker(); // stops the node, if it started
  throwaway_broker(const throwaway_broker&) = delete;
  throwaway_broker& operator=(const throwaway_broker&) = delete;

  [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
  std::string script_;
  std::string dir_;
  std::string url_;
};

} // namespace bench
