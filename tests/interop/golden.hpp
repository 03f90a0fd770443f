// The golden interop files (tests/interop/golden/, where each fact comes
// from is in SOURCES.md), read by the tests that check against them. The
// including target defines BUS_INTEROP_GOLDEN_DIR.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace bus::test {

inline std::string golden(const std::string& name) {
  std::ifstream in(std::string(BUS_INTEROP_GOLDEN_DIR) + "/" + name);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace bus::test
