// Must not compile: nothing follows a terminal action, not even another one.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

void configure(bus::policy_builder& p) {
  p.on_any().retry(3).then_redeliver().then_dead_letter().then_dead_letter();
}
