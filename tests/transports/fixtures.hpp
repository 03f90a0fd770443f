// One fixture per transport for the conformance suite: each makes a fresh,
// isolated transport and names queues so that runs never see each other.
#pragma once

#include <memory>
#include <string>

#include "bus/in_memory_transport.hpp"

namespace bus::test {

struct in_memory_fixture {
  std::shared_ptr<bus::transport> transport = std::make_shared<bus::in_memory_transport>();
  std::string queue(const std::string& base) const { return base; }
};

} // namespace bus::test
