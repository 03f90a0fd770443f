#include "bus/exception_info.hpp"

#include "bus/caught_exception.hpp"

namespace bus {

exception_info describe(const std::exception_ptr& ptr) noexcept {
  // One rethrow, in caught_exception, which names a type with the same
  // function as the policy's rules, so a fault header and a rule's
  // description always agree on a type's name.
  return caught_exception(ptr).describe();
}

} // namespace bus
