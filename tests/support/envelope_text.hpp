// What a test reads out of an envelope as text, for checks whose failure
// message should name the value: a header, or "<missing>" when it has none.
#pragma once

#include <string>
#include <string_view>

#include "bus/envelope.hpp"

namespace bus::test {

inline std::string header_or_missing(const envelope& e, std::string_view name) {
  return std::string(e.headers.find(name).value_or("<missing>"));
}

} // namespace bus::test
