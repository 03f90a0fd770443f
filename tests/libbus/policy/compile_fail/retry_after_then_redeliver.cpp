// Must not compile: retries come before redeliveries, never after.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on_any().retry(3).then_redeliver().retry();
}
