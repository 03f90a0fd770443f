// The golden interop files (tests/interop/golden/, where each fact comes
// from is in SOURCES.md), read by the tests that check against them. The
// including target defines BUS_INTEROP_GOLDEN_DIR.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bus::test {

inline std::string golden(const std::string& name) {
  std::ifstream in(std::string(BUS_INTEROP_GOLDEN_DIR) + "/" + name);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names of a JSON object's fields, in its order: the shape what the
// bus writes is compared with the golden formats by.
inline std::vector<std::string> field_names(const nlohmann::ordered_json& object) {
  std::vector<std::string> names;
  for (const auto& [name, value] : object.items())
    names.push_back(name);
  return names;
}

} // namespace bus::test
