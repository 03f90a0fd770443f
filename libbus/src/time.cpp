#include "bus/time.hpp"

#include <cstdio>
#include <ctime>

namespace bus {

std::int64_t to_unix_ms(time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

time_point from_unix_ms(std::int64_t ms) noexcept {
  return time_point(std::chrono::duration_cast<time_point::duration>(std::chrono::milliseconds(ms)));
}

std::optional<time_point> checked_from_unix_ms(std::int64_t ms) noexcept {
  if (ms > max_unix_ms || ms < -max_unix_ms)
    return std::nullopt;
  return from_unix_ms(ms);
}

std::string to_iso8601(time_point t) {
  auto ms = to_unix_ms(t);
  auto secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  auto millis = static_cast<int>(ms - static_cast<std::int64_t>(secs) * 1000);
  std::tm parts{};
  gmtime_r(&secs, &parts);
  char buf[96]; // room for any int the format may print
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, millis);
  return buf;
}

namespace {

// Days from 1970-01-01 to the given date of the proleptic Gregorian
// calendar (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool is_leap(std::int64_t y) noexcept {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

// Reads exactly `count` decimal digits at `at`, advancing it.
bool digits(std::string_view text, std::size_t& at, std::size_t count, std::int64_t& out) noexcept {
  if (text.size() - at < count)
    return false;
  std::int64_t value = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  at += count;
  out = value;
  return true;
}

bool literal(std::string_view text, std::size_t& at, char c) noexcept {
  if (at >= text.size() || text[at] != c)
    return false;
  ++at;
  return true;
}

} // namespace

std::optional<time_point> from_iso8601(std::string_view text) noexcept {
  std::size_t at = 0;
  std::int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, at, 4, year) || !literal(text, at, '-') || !digits(text, at, 2, month)
      || !literal(text, at, '-') || !digits(text, at, 2, day) || !literal(text, at, 'T')
      || !digits(text, at, 2, hour) || !literal(text, at, ':') || !digits(text, at, 2, minute)
      || !literal(text, at, ':') || !digits(text, at, 2, second))
    return std::nullopt;
  std::int64_t millis = 0;
  if (literal(text, at, '.')) {
    std::size_t count = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (count < 3)
        millis = millis * 10 + (text[at] - '0');
      ++count;
      ++at;
    }
    if (count == 0 || count > 9)
      return std::nullopt;
    for (std::size_t i = count; i < 3; ++i)
      millis *= 10;
  }
  if (!literal(text, at, 'Z') || at != text.size())
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1
      || day > days_in_month(year, static_cast<unsigned>(month)) || hour > 23 || minute > 59
      || second > 59)
    return std::nullopt;
  // Four digits keep every value small: no overflow below.
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const std::int64_t ms = ((days * 24 + hour) * 60 + minute) * 60'000 + second * 1000 + millis;
  if (ms < 0 || ms > max_unix_ms)
    return std::nullopt;
  return from_unix_ms(ms);
}

namespace {

// Appends `value` with at least `width` digits, zero-padded.
void append_padded(std::string& out, std::int64_t value, std::size_t width) {
  char digits[20];
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  out.append(width > n ? width - n : 0, '0');
  while (n > 0)
    out += digits[--n];
}

} // namespace

std::string to_hms(duration d) {
  // Written digit by digit: every delayed retry's log line carries one, and
  // snprintf's format parsing was 2.6% of a run in which every message
  // fails once (docs/performance.md).
  std::int64_t total_ms = d.count() < 0 ? 0 : d.count();
  std::string out; // "hh:mm:ss.mmm" fits the string's own buffer: no allocation
  append_padded(out, total_ms / 3'600'000, 2);
  out += ':';
  append_padded(out, (total_ms / 60'000) % 60, 2);
  out += ':';
  append_padded(out, (total_ms / 1000) % 60, 2);
  if (auto ms = total_ms % 1000; ms != 0) {
    out += '.';
    append_padded(out, ms, 3);
  }
  return out;
}

} // namespace bus
