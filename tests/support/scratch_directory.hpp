// A fresh directory of its own for one test (a database file, a dead-letter
// file), removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace bus::test {

class scratch_directory {
public:
  scratch_directory() {
    auto pattern = (std::filesystem::temp_directory_path() / "bus-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a scratch directory from " + pattern);
    path_ = pattern;
  }
  ~scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;

  // `name` inside the directory.
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

} // namespace bus::test
