// Must not compile: a delay function returns a duration, not a bare number of unknown unit.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on<std::runtime_error>().retry(
      3, [](const std::runtime_error&, int attempt) { return 100 * attempt; });
}
