// Turns any caught exception, std::exception or not, into printable facts:
// its demangled type and its message. The one place that knows how.
#pragma once

#include <exception>
#include <string>

namespace bus {

struct exception_info {
  std::string type;    // demangled, e.g. "std::runtime_error" or "int"
  std::string message; // what() for a std::exception, else a description
};

// Describes the exception `ptr` holds. Never throws; a null pointer gives
// type "none".
[[nodiscard]] exception_info describe(const std::exception_ptr& ptr) noexcept;

} // namespace bus
