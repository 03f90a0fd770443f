#include "bus/exception_info.hpp"

#include <cstdlib>
#include <cxxabi.h>
#include <memory>
#include <typeinfo>

namespace bus {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

} // namespace

exception_info describe(const std::exception_ptr& ptr) noexcept {
  if (!ptr)
    return {"none", "no exception"};
  try {
    try {
      std::rethrow_exception(ptr);
    } catch (const std::exception& e) {
      // typeid of a polymorphic reference names the dynamic type.
      return {demangle(typeid(e).name()), e.what()};
    } catch (...) {
      // Not a std::exception: the C++ ABI still knows its type.
      auto* type = abi::__cxa_current_exception_type();
      auto name = type ? demangle(type->name()) : std::string("unknown");
      return {name, "an exception of type " + name + " (not derived from std::exception)"};
    }
  } catch (...) {
    return {"unknown", "the exception could not be described"};
  }
}

} // namespace bus
