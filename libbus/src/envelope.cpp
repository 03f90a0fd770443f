#include "bus/envelope.hpp"

namespace bus {

namespace {

// Writes the low `digits` hex digits of `value`, most significant first.
char* put_hex(char* out, std::uint64_t value, int digits) {
  static constexpr char hex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4)
    *out++ = hex[(value >> shift) & 0xf];
  return out;
}

} // namespace

std::string make_message_id(std::uint64_t hi, std::uint64_t lo) {
  // RFC 4122 version 4: the version nibble is 4, the variant bits are 10.
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  // Encoded by hand: every message gets an id, and snprintf's format
  // parsing was a measurable share of the no-op handler path.
  std::string id(36, '-');
  char* out = id.data();
  out = put_hex(out, hi >> 32, 8) + 1;
  out = put_hex(out, hi >> 16, 4) + 1;
  out = put_hex(out, hi, 4) + 1;
  out = put_hex(out, lo >> 48, 4) + 1;
  put_hex(out, lo, 12);
  return id;
}

} // namespace bus
