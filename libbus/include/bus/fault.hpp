// The copy of a failed message that goes to the error queue: the original
// envelope plus fault headers saying what failed, where and after how many
// attempts. Pure: the caller supplies the time, host and process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bus/envelope.hpp"
#include "bus/exception_info.hpp"

namespace bus {

struct fault_details {
  exception_info exception;
  std::string reason;   // why it went to the error queue, e.g. "retries exhausted"
  time_point at{};
  std::string host;
  std::string process;
  std::string endpoint;
  std::string original_address; // the queue it was taken from
  int immediate_retries = 0;    // retries in the delivery that failed last
  std::uint32_t delivery_count = 0;
  // Its offset, for a message read from a stream (none for a queue's).
  std::optional<std::uint64_t> stream_offset;
};

// Bounds on fault metadata: a broker refuses oversized headers, and a
// stack of nested exception texts can be arbitrarily long.
struct fault_limits {
  std::size_t max_message_bytes = 4096;
};

// `message` with the fault headers set (any earlier fault-* headers are
// replaced). Over-long texts are cut at a UTF-8 character boundary and end
// in "...(truncated)".
[[nodiscard]] envelope with_fault_headers(envelope message, const fault_details& fault,
                                          const fault_limits& limits = {});

// The fault facts written by with_fault_headers(), read back leniently,
// for display: missing or malformed numbers read as 0, a missing or
// malformed time (see from_iso8601) as the epoch. A fault that decides
// what happens to a message is read with read_fault_headers()
// (bus/delivery_history.hpp), which refuses what does not parse.
[[nodiscard]] fault_details fault_from_headers(const envelope& message);

// Cuts `text` to at most `max_bytes` bytes without splitting a UTF-8
// sequence; a cut text ends in a marker that counts toward the limit.
[[nodiscard]] std::string truncate_utf8(std::string text, std::size_t max_bytes);

} // namespace bus
