// The conformance suite's fixture for RabbitMQ: a fresh transport (its own
// two connections) on the test broker, and queue names unique to the test,
// so that tests running at the same time on one broker never meet.
#pragma once

#include <memory>
#include <string>

#include "broker.hpp"
#include "bus/transport.hpp"

namespace bus::test {

struct rabbitmq_fixture {
  std::shared_ptr<bus::transport> transport = connect_transport();
  std::string prefix = unique_name("conformance.");
  std::string queue(const std::string& base) const { return prefix + base; }
};

} // namespace bus::test
