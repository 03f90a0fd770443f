#include "bus/exception_info.hpp"

#include <cxxabi.h>
#include <typeinfo>

#include "bus/policy/exception_type.hpp"

namespace bus {

exception_info describe(const std::exception_ptr& ptr) noexcept {
  if (!ptr)
    return {"none", "no exception"};
  try {
    try {
      std::rethrow_exception(ptr);
    } catch (const std::exception& e) {
      // typeid of a polymorphic reference names the dynamic type. Named by
      // the same function as the policy's rules, so a fault header and a
      // rule's description always agree on a type's name.
      return {detail::type_name(typeid(e)), e.what()};
    } catch (...) {
      // Not a std::exception: the C++ ABI still knows its type.
      auto* type = abi::__cxa_current_exception_type();
      auto name = type ? detail::type_name(*type) : std::string("unknown");
      return {name, "an exception of type " + name + " (not derived from std::exception)"};
    }
  } catch (...) {
    return {"unknown", "the exception could not be described"};
  }
}

} // namespace bus
