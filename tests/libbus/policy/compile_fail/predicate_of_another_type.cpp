// Must not compile: the predicate of on<E> takes const E&.
#include "bus/policy/resilience.hpp"

#include <stdexcept>

#include <string>

void configure(bus::policy_builder& p) {
  p.on<std::runtime_error>([](const std::string& s) { return s.empty(); }).retry();
}
