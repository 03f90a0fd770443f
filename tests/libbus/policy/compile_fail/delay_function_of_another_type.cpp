// Must not compile: a bare number is not a delay, and a delay function takes (const E&, int).
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on<std::runtime_error>().retry(3, 200);
}
