// Must not compile: nothing follows a terminal action.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on<std::runtime_error>().dead_letter().retry();
}
