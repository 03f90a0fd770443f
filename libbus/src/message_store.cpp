#include "bus/message_store.hpp"

#include <cstdio>
#include <random>

namespace bus::detail {

std::string new_store_owner() {
  std::random_device device;
  std::string out;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(device()));
    out += part;
  }
  return out;
}

} // namespace bus::detail
