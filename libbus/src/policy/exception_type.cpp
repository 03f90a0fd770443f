#include "bus/policy/exception_type.hpp"

#include <cstdlib>
#include <memory>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define BUS_HAVE_CXXABI 1
#else
#define BUS_HAVE_CXXABI 0
#endif

namespace bus::detail {

std::string type_name(const std::type_info& info) {
#if BUS_HAVE_CXXABI
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(info.name(), nullptr, nullptr, &status), &std::free);
  if (status == 0 && demangled)
    return demangled.get();
#endif
  return info.name();
}

const std::type_info* thrown_type(const std::exception_ptr& exception) noexcept {
  if (!exception)
    return nullptr;
  try {
    std::rethrow_exception(exception);
  } catch (...) {
#if BUS_HAVE_CXXABI
    // The Itanium ABI (GCC, Clang) records the type of the thrown object
    // with the exception itself: the thrown type even for `throw 42`.
    return abi::__cxa_current_exception_type();
#else
    return nullptr;
#endif
  }
}

std::string thrown_type_name(const std::exception_ptr& exception) {
  if (!exception)
    return "no exception";
  if (const auto* info = thrown_type(exception))
    return type_name(*info);
  try {
    std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    return type_name(typeid(e));
  } catch (...) {
    return "unknown";
  }
}

std::string exception_message(const std::exception_ptr& exception) {
  if (!exception)
    return {};
  try {
    std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return {};
  }
}

} // namespace bus::detail
