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

std::string to_hms(duration d) {
  auto total_ms = d.count() < 0 ? 0 : d.count();
  auto ms = total_ms % 1000;
  auto s = (total_ms / 1000) % 60;
  auto m = (total_ms / 60'000) % 60;
  auto h = total_ms / 3'600'000;
  char buf[40];
  if (ms == 0)
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  else
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld.%03lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s),
                  static_cast<long long>(ms));
  return buf;
}

} // namespace bus
