// Where a stream endpoint keeps its offset (issue 27): in the endpoint's
// message store when it has one (stream/offset_in_store.hpp), beside the
// inbox that already remembers what it handled, else in a small file of
// the bus's own (stream/offset_file.hpp). The reader sees only this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bus/error.hpp"

namespace bus::detail {

class stream_offset_keeper {
public:
  virtual ~stream_offset_keeper() = default;

  // The offset saved last; none if nothing was ever saved. What cannot be
  // read is an error, not "none": a reader that started over from its
  // start_from would read again, or skip, what was kept to remember.
  [[nodiscard]] virtual result<std::optional<std::uint64_t>> load() = 0;

  [[nodiscard]] virtual result<void> save(std::uint64_t committed) = 0;

  // Where the offset is kept, for log lines: a file's path, a store's name.
  [[nodiscard]] virtual std::string where() const = 0;
};

} // namespace bus::detail
