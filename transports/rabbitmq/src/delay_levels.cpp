#include "delay_levels.hpp"

namespace bus::detail {

delay_levels::delay_levels(unsigned levels, std::chrono::milliseconds unit)
    : levels_(levels), unit_(unit),
      prefix_("bus.delay." + std::to_string(unit.count()) + "ms." + std::to_string(levels)) {}

std::chrono::milliseconds delay_levels::max_delay() const noexcept {
  return unit_ * static_cast<std::int64_t>((std::uint64_t{1} << levels_) - 1);
}

std::uint64_t delay_levels::units(std::chrono::milliseconds delay) const noexcept {
  if (delay.count() <= 0)
    return 0;
  auto whole = static_cast<std::uint64_t>(delay.count());
  auto unit = static_cast<std::uint64_t>(unit_.count());
  return whole / unit + (whole % unit != 0 ? 1 : 0);
}

std::string delay_levels::level_name(unsigned k) const {
  std::string n = std::to_string(k);
  return prefix_ + ".level." + (n.size() < 2 ? "0" + n : n);
}

std::string delay_levels::next_exchange(unsigned k) const {
  return k == 0 ? delivery_exchange() : level_name(k - 1);
}

std::int64_t delay_levels::level_ttl_ms(unsigned k) const noexcept {
  return unit_.count() * static_cast<std::int64_t>(std::uint64_t{1} << k);
}

std::string delay_levels::bit_binding(unsigned k, bool bit) const {
  std::string key;
  for (unsigned i = 0; i + 1 + k < levels_; ++i)
    key += "*.";
  key += bit ? "1.#" : "0.#";
  return key;
}

std::string delay_levels::destination_binding(const std::string& queue) const {
  std::string key;
  for (unsigned i = 0; i < levels_; ++i)
    key += "*.";
  return key + queue;
}

std::string delay_levels::routing_key(std::uint64_t units, const std::string& queue) const {
  std::string key;
  key.reserve(2 * levels_ + queue.size());
  for (unsigned k = levels_; k-- > 0;) {
    key += ((units >> k) & 1) ? '1' : '0';
    key += '.';
  }
  return key + queue;
}

} // namespace bus::detail
