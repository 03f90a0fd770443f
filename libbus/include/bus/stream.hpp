// Streams (issue 27): an append-only log that many endpoints read, each
// from an offset of its own, where settling a message removes nothing
// (RabbitMQ's stream queues; the in-memory transport's logs). What the bus
// needs to know of one: where a reader starts, how long the stream keeps
// what was appended, and where a reader stands.
//
// A message read from a stream may be neither retried nor redelivered, and
// nothing may be deferred to a stream: a stream is not one consumer's, so
// another copy of a message would be read again by every reader (the rule
// Shuttle.Esb states). A failed one goes to the endpoint's error queue or
// is discarded, and the reading goes on.
//
// Pure: no clock, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "bus/time.hpp"

namespace bus {

// Where a stream endpoint starts reading when no offset of its own is
// stored (a stored offset always wins: a restart resumes there).
struct stream_start {
  enum class from : std::uint8_t {
    first,     // the oldest message the stream still keeps
    last,      // the last chunk the stream wrote (RabbitMQ's "last")
    next,      // only what is appended from now on
    offset,    // the message at `offset`, or the oldest kept if it is gone
    timestamp, // the first message appended at or after `time`
  };
  from where = from::next;
  std::uint64_t offset = 0; // from::offset
  time_point time{};        // from::timestamp

  [[nodiscard]] static stream_start first() noexcept { return {from::first, 0, {}}; }
  [[nodiscard]] static stream_start last() noexcept { return {from::last, 0, {}}; }
  [[nodiscard]] static stream_start next() noexcept { return {from::next, 0, {}}; }
  [[nodiscard]] static stream_start at_offset(std::uint64_t n) noexcept {
    return {from::offset, n, {}};
  }
  [[nodiscard]] static stream_start at_time(time_point t) noexcept {
    return {from::timestamp, 0, t};
  }
};

// "first", "last", "next", "offset 42", "time 2026-11-28T06:00:00.000Z".
[[nodiscard]] std::string to_string(const stream_start& start);

// How much a stream keeps; zero for either: no limit of that kind (the
// broker's default). RabbitMQ: x-max-length-bytes and x-max-age, applied
// by whole segments, so a stream may keep somewhat more than asked.
struct stream_retention {
  std::uint64_t max_length_bytes = 0;
  std::chrono::seconds max_age{0};
};

// The retention's mistakes, one sentence each joined by "; ", or empty.
[[nodiscard]] std::string validate(const stream_retention& retention);

// Where a reader stands. Messages are read in offset order and, with
// several slots, settle in any order; the offset a reader may store is the
// last one below which nothing is unsettled, so that a restart from the
// next one skips nothing. What was in flight at a crash is read again:
// at most one handling twice per slot.
class stream_position {
public:
  // `resume_at`: the offset the reading starts from when it is known (a
  // stored offset); nothing settled is known before it.
  explicit stream_position(std::optional<std::uint64_t> resume_at = std::nullopt) noexcept;

  // The message at `offset` was read. Offsets come in increasing order,
  // with gaps where the stream has none to give (retention, a start in the
  // middle of a chunk); one at or below the last read is refused (false):
  // a transport that delivers it twice has a bug the caller logs.
  bool read(std::uint64_t offset);

  // The message at `offset` has settled: handled, on the error queue, or
  // discarded. False for one not read or settled already.
  bool settled(std::uint64_t offset);

  // The last offset with everything up to it settled; none before the
  // first such one.
  [[nodiscard]] std::optional<std::uint64_t> committed() const noexcept { return committed_; }

  // Where a reader that starts again resumes: one past committed(), or
  // the resume_at it was given while nothing settled since.
  [[nodiscard]] std::optional<std::uint64_t> resume_at() const noexcept;

  // The last offset read; none before the first.
  [[nodiscard]] std::optional<std::uint64_t> last_read() const noexcept { return last_read_; }

  // Read and not yet behind committed(): in flight, or settled behind one
  // that is.
  [[nodiscard]] std::size_t unsettled() const noexcept;

  // How far the reader is behind the stream's last offset `tail`: the
  // messages after committed() up to and including `tail`.
  [[nodiscard]] std::uint64_t lag(std::uint64_t tail) const noexcept;

private:
  struct entry {
    std::uint64_t offset;
    bool settled;
  };
  std::deque<entry> open_; // read, not yet committed, in offset order
  std::optional<std::uint64_t> committed_;
  std::optional<std::uint64_t> last_read_;
  std::optional<std::uint64_t> resume_at_;
};

} // namespace bus
