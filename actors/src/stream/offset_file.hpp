// Where a stream endpoint keeps its offset when no message store does
// (issue 27): one small file per reader and stream, holding the last
// offset with everything up to it settled, in decimal. RabbitMQ 3.10 keeps
// no offsets for AMQP 0.9.1 readers, and the in-memory transport none at
// all, so the bus keeps its own.
//
// Each save writes a new file and renames it over the old one, so a reader
// of the file sees the old offset or the new one, never half of either;
// a killed process loses nothing it saved. Nothing is synced to disk: a
// machine that crashes may come back with an older offset, which reads
// some messages again and skips none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bus/error.hpp"
#include "stream/offset_keeper.hpp"

namespace bus::detail {

class stream_offset_file final : public stream_offset_keeper {
public:
  // <directory>/<stream>.<reader>.offset; the directory is created by the
  // first save that works. Not thread-safe: its reader's mutex guards it.
  stream_offset_file(std::string directory, const std::string& stream, const std::string& reader);

  // A file that holds anything but an offset is an error naming it.
  [[nodiscard]] result<std::optional<std::uint64_t>> load() override;
  [[nodiscard]] result<void> save(std::uint64_t committed) override;
  // The file's path.
  [[nodiscard]] std::string where() const override { return path_; }

private:
  std::string directory_;
  std::string path_;
  bool directory_made_ = false;
};

} // namespace bus::detail
