#include "stream/offset_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace bus::detail {

namespace fs = std::filesystem;

namespace {

// A name as a part of a file name: a '/' (legal in a RabbitMQ queue's
// name) would make it a directory.
std::string file_part(std::string name) {
  for (auto& c : name)
    if (c == '/')
      c = '_';
  return name;
}

} // namespace

stream_offset_file::stream_offset_file(std::string directory, const std::string& stream,
                                       const std::string& reader)
    : directory_(std::move(directory)),
      path_((fs::path(directory_) / (file_part(stream) + "." + file_part(reader) + ".offset"))
              .string()) {}

result<std::optional<std::uint64_t>> stream_offset_file::load() {
  std::ifstream in(path_);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path_, ec) && !ec)
      return std::optional<std::uint64_t>{};
    return error{errc::store_failure,
                 "cannot read the stream offset in '" + path_ + "': " + std::strerror(errno)};
  }
  std::string text;
  std::getline(in, text);
  std::uint64_t offset = 0;
  auto used = std::size_t{0};
  try {
    offset = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text.front() == '-')
    return error{errc::store_failure,
                 "'" + path_ + "' should hold a stream offset, and holds '" + text
                   + "'; remove it to read from the endpoint's start_from again"};
  return std::optional<std::uint64_t>{offset};
}

result<void> stream_offset_file::save(std::uint64_t committed) {
  // Once, not at every settle: a save is on the path of each delivery.
  if (!directory_made_) {
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec)
      return error{errc::store_failure, "cannot create the stream offset directory '" + directory_
                                          + "': " + ec.message()};
    directory_made_ = true;
  }
  auto next = path_ + ".next";
  {
    std::ofstream out(next, std::ios::trunc);
    out << committed << '\n';
    out.flush();
    if (!out)
      return error{errc::store_failure,
                   "cannot write '" + next + "': " + std::strerror(errno)};
  }
  if (std::rename(next.c_str(), path_.c_str()) != 0)
    return error{errc::store_failure,
                 "cannot rename '" + next + "' to '" + path_ + "': " + std::strerror(errno)};
  return {};
}

} // namespace bus::detail
