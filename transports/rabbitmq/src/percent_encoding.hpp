// RFC 3986 percent-encoding of a URL part: everything but the unreserved
// characters as %XX. The URL of a broker or of its management API.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace bus::detail {

inline std::string percent_encode(std::string_view in) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

} // namespace bus::detail
