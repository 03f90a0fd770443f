// W3C traceparent parsing and formatting, and the bus's derived ids. The
// derivations hash with FNV-1a (64 bit) and a final avalanche mix: stable
// across processes and compilers, unlike std::hash, which matters because
// two processes must derive the same trace for one untraced message.
#include "bus/trace_context.hpp"

namespace bus {

namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";

// The value of one lowercase hex digit, or -1.
int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

// Reads `out.size()` bytes of lowercase hex from `text`; false on any other
// character.
template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  if (text.size() != 2 * N)
    return false;
  for (std::size_t i = 0; i < N; ++i) {
    auto hi = hex_value(text[2 * i]);
    auto lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

// Writes `bytes` as 2 * N lowercase hex digits from `out` on. Each
// traceparent is formatted into one string of its final size: building it
// from pieces cost several allocations per message sent, 9% of a no-op
// endpoint's CPU (docs/performance.md).
template <std::size_t N>
void write_hex(const std::array<std::uint8_t, N>& bytes, char* out) {
  for (auto b : bytes) {
    *out++ = hex_digits[b >> 4];
    *out++ = hex_digits[b & 0x0f];
  }
}

template <std::size_t N>
std::string write_hex(const std::array<std::uint8_t, N>& bytes) {
  std::string out(2 * N, '0');
  write_hex(bytes, out.data());
  return out;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) {
  for (auto b : bytes)
    if (b != 0)
      return false;
  return true;
}

template <std::size_t N>
void put_word(std::array<std::uint8_t, N>& out, std::size_t at, std::uint64_t word) {
  for (std::size_t i = 0; i < 8; ++i)
    out[at + i] = static_cast<std::uint8_t>(word >> (56 - 8 * i));
}

// FNV-1a over a sequence of fields, each followed by a separator byte so
// that ("ab", "c") and ("a", "bc") differ.
struct fnv1a {
  std::uint64_t state;
  void add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      state ^= c;
      state *= 0x100000001b3ULL;
    }
    state ^= 0xff;
    state *= 0x100000001b3ULL;
  }
  void add(std::uint64_t word) {
    char bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>(word >> (8 * i));
    add(std::string_view(bytes, 8));
  }
  // splitmix64's finaliser: spreads FNV's weak high bits.
  [[nodiscard]] std::uint64_t result() const {
    auto z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;

} // namespace

std::optional<trace_context> parse_traceparent(std::string_view text) {
  // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55.
  constexpr std::size_t length = 55;
  if (text.size() < length)
    return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(text.substr(0, 2), version) || version[0] == 0xff)
    return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may add fields, each
  // after a '-'.
  if (version[0] == 0 ? text.size() != length : text.size() > length && text[length] != '-')
    return std::nullopt;
  if (text[2] != '-' || text[35] != '-' || text[52] != '-')
    return std::nullopt;
  trace_context context;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(text.substr(3, 32), context.trace) || !read_hex(text.substr(36, 16), context.parent)
      || !read_hex(text.substr(53, 2), flags))
    return std::nullopt;
  if (all_zero(context.trace) || all_zero(context.parent))
    return std::nullopt;
  context.flags = flags[0];
  return context;
}

std::string format_traceparent(const trace_context& context) {
  // "00-" trace-id "-" parent-id "-" flags: the layout parse_traceparent reads.
  std::string out(55, '-');
  out[0] = '0';
  out[1] = '0';
  write_hex(context.trace, out.data() + 3);
  write_hex(context.parent, out.data() + 36);
  write_hex(std::array<std::uint8_t, 1>{context.flags}, out.data() + 53);
  return out;
}

std::string to_hex(const trace_id& id) { return write_hex(id); }
std::string to_hex(const span_id& id) { return write_hex(id); }

trace_context new_trace(std::uint64_t hi, std::uint64_t lo, std::uint64_t span) {
  trace_context context;
  put_word(context.trace, 0, hi);
  put_word(context.trace, 8, lo == 0 && hi == 0 ? 1 : lo);
  put_word(context.parent, 0, span == 0 ? 1 : span);
  context.flags = 0x01;
  return context;
}

trace_context trace_for_untraced(std::string_view message_id) {
  fnv1a first{fnv_offset};
  first.add("bus-trace");
  first.add(message_id);
  fnv1a second{first.result()};
  second.add(message_id);
  trace_context context;
  put_word(context.trace, 0, first.result());
  put_word(context.trace, 8, second.result() == 0 && first.result() == 0 ? 1 : second.result());
  context.flags = 0x01;
  return context; // parent stays all zeros: the attempt's span is a root
}

span_id attempt_span_id(const trace_id& trace, std::string_view message_id,
                        std::uint32_t delivery_count, int attempt, std::int64_t started_ns) {
  fnv1a h{fnv_offset};
  h.add(std::string_view(reinterpret_cast<const char*>(trace.data()), trace.size()));
  h.add(message_id);
  h.add(static_cast<std::uint64_t>(delivery_count));
  h.add(static_cast<std::uint64_t>(attempt));
  h.add(static_cast<std::uint64_t>(started_ns));
  auto word = h.result();
  span_id span;
  put_word(span, 0, word == 0 ? 1 : word);
  return span;
}

trace_context child_of(const trace_context& parent, const span_id& span) {
  trace_context child = parent;
  child.parent = span;
  return child;
}

} // namespace bus
