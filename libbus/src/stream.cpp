#include "bus/stream.hpp"

#include <algorithm>

namespace bus {

std::string to_string(const stream_start& start) {
  switch (start.where) {
    case stream_start::from::first:
      return "first";
    case stream_start::from::last:
      return "last";
    case stream_start::from::next:
      return "next";
    case stream_start::from::offset:
      return "offset " + std::to_string(start.offset);
    case stream_start::from::timestamp:
      return "time " + to_iso8601(start.time);
  }
  return "next";
}

std::string validate(const stream_retention& retention) {
  if (retention.max_age.count() < 0)
    return "a stream's max age is " + std::to_string(retention.max_age.count())
           + " s; it must be positive, or zero for no limit";
  return {};
}

stream_position::stream_position(std::optional<std::uint64_t> resume_at) noexcept
    : resume_at_(resume_at) {}

bool stream_position::read(std::uint64_t offset) {
  if (last_read_ && offset <= *last_read_)
    return false;
  last_read_ = offset;
  open_.push_back(entry{offset, false});
  return true;
}

bool stream_position::settled(std::uint64_t offset) {
  auto it = std::lower_bound(open_.begin(), open_.end(), offset,
                             [](const entry& e, std::uint64_t o) { return e.offset < o; });
  if (it == open_.end() || it->offset != offset || it->settled)
    return false;
  it->settled = true;
  // Only the front's settling moves the committed offset, over every
  // settled one behind it.
  while (!open_.empty() && open_.front().settled) {
    committed_ = open_.front().offset;
    open_.pop_front();
  }
  return true;
}

std::optional<std::uint64_t> stream_position::resume_at() const noexcept {
  if (committed_)
    return *committed_ + 1;
  return resume_at_;
}

std::size_t stream_position::unsettled() const noexcept {
  return open_.size();
}

std::uint64_t stream_position::lag(std::uint64_t tail) const noexcept {
  auto from = resume_at();
  if (!from)
    return 0; // nothing known of where it stands: no lag to tell
  return tail >= *from ? tail - *from + 1 : 0;
}

} // namespace bus
