// The RabbitMQ node of the RabbitMQ cases, started only while they run: a
// node on the same two cores takes CPU from the in-memory runs (its boot
// work, its schedulers' busy waiting), which slowed raw CAF and the bus
// alike by a quarter to a third when it ran beside them. Or a three-node
// cluster, for the quorum queue cases.
#pragma once

#include <string>

namespace bench {

class throwaway_broker {
public:
  enum class shape { single_node, cluster };

  // Starts a node (or a cluster) in `dir` with `script`
  // (scripts/rabbitmq-test-broker.sh), its output in `log`. Check url():
  // empty if it did not start. A cluster's url() is its first node alone,
  // the one node both sides of a case talk to.
  throwaway_broker(std::string script, std::string dir, const std::string& log,
                   shape what = shape::single_node);
  ~throwaway_broker(); // stops the node, if it started
  throwaway_broker(const throwaway_broker&) = delete;
  throwaway_broker& operator=(const throwaway_broker&) = delete;

  [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
  std::string script_;
  std::string dir_;
  shape shape_;
  std::string url_;
};

} // namespace bench
