// What a replayed message carries, whoever replays it (busctl, the bus's
// page): which headers of the error-queue copy go back to the original
// queue, and what a replay adds. Pure, so the rules are unit-tested without
// a broker; docs/busctl.md explains each one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/time.hpp"

namespace bus {

// False for the headers a replay drops:
// - every bus-fault-* header but bus-fault-address (that one is the message's
//   own fault address, where its fault<T> event goes, not a fault fact);
// - bus-delivery-count, bus-failed-attempts and bus-first-failure-at: the
//   message starts over with a fresh retry budget, otherwise the time limit
//   (counted from the first failure) or max_attempts would send it straight
//   back to the error queue; bus-delivery-count is written again as 0;
// - a broker's own x-* headers (x-death, x-delivery-count, ...);
// - bus-skipped-reason and bus-wire-error, which describe an earlier receipt;
// - the replay headers themselves, which are written anew.
[[nodiscard]] bool kept_on_replay(std::string_view header_name);

// The headers to add to the kept ones, in this order: bus-delivery-count 0,
// bus-replayed-at `now`, bus-replay-count (`previous_replays` + 1; a
// negative count reads as 0), bus-replayed-from `source_queue`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>>
replay_additions(std::int64_t previous_replays, time_point now, const std::string& source_queue);

// Why a replay to `destination` is refused, empty when it is not. A message
// read from a stream (its error copy carries bus-fault-stream-offset) goes
// back to its stream only by being appended to it: every reader of the
// stream would handle it a second time, which is the duplicate processing
// the no-retry rule for streams exists to prevent. It may be replayed to
// any other queue. `original_address` is the stream it was read from.
[[nodiscard]] std::string stream_replay_refusal(std::string_view stream_offset,
                                                std::string_view original_address,
                                                std::string_view destination);

// The copy of `failed` that a replay sends: the kept headers, then the
// additions; its delivery count 0, everything else as it was.
[[nodiscard]] envelope replayed_copy(const envelope& failed, time_point now,
                                     const std::string& source_queue);

} // namespace bus
