#include "bus/policy/exception_type.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define BUS_HAVE_CXXABI 1
#else
#define BUS_HAVE_CXXABI 0
#endif

namespace bus::detail {

namespace {

std::string demangled_name(const char* mangled) {
#if BUS_HAVE_CXXABI
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  if (status == 0 && demangled)
    return demangled.get();
#endif
  return mangled;
}

} // namespace

std::string type_name(const std::type_info& info) {
  // Every failed attempt names its exception's type, and demangling it
  // was 2.3% of a run in which every message fails once: each thread keeps
  // the names it made, one per type it has seen. Keyed by the mangled name,
  // a copy, so that no entry points into a library unloaded since.
  thread_local std::map<std::string, std::string, std::less<>> names;
  std::string_view mangled = info.name();
  auto it = names.find(mangled);
  if (it == names.end())
    it = names.emplace(std::string(mangled), demangled_name(info.name())).first;
  return it->second;
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
