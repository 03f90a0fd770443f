// Must not compile: redelivery is configured once per rule.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on_any().redeliver().then_redeliver();
}
