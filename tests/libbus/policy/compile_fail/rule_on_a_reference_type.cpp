// Must not compile: a rule names the exception type itself, not a reference to it.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on<std::runtime_error&>().retry();
}
