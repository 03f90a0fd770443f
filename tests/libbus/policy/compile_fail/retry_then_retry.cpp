// Must not compile: a rule has one retry tier.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on_any().retry(3).retry(2);
}
