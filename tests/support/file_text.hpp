// The whole text of a file a child process wrote (its ledger, its output),
// or "" when it wrote none.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace bus::test {

inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace bus::test
