// What a replayed message carries: which headers of the error-queue copy go
// back to the original queue, and what busctl adds. Pure, so the rules are
// unit-tested without a broker; docs/busctl.md explains each one.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bus/time.hpp"
#include "queued_message.hpp"

namespace bus::ctl {

// The headers busctl writes on a replayed message are named in
// bus/header_names.hpp (header::replayed_at, replay_count, replayed_from).

// False for the headers a replay drops:
// - every bus-fault-* header but bus-fault-address (that one is the message's
//   own fault address, where its fault<T> event goes, not a fault fact);
// - bus-delivery-count, bus-failed-attempts and bus-first-failure-at: the
//   message starts over with a fresh retry budget, otherwise the time limit
//   (counted from the first failure) or max_attempts would send it straight
//   back to the error queue; bus-delivery-count is written again as 0;
// - the broker's own x-* headers (x-death, x-delivery-count, ...);
// - bus-wire-error and bus-skipped-reason, which describe an earlier receipt;
// - the replay headers themselves, which are written anew.
[[nodiscard]] bool kept_on_replay(std::string_view header_name);

// The headers to add to the kept ones, in this order: bus-delivery-count 0,
// bus-replayed-at `now`, bus-replay-count (the message's previous count + 1),
// bus-replayed-from `source_queue`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>>
replay_additions(const queued_message& m, time_point now, const std::string& source_queue);

// Where a replay sends the message: bus-fault-original-address, else
// `endpoint_queue`.
[[nodiscard]] std::string replay_destination(const queued_message& m,
                                             const std::string& endpoint_queue);

} // namespace bus::ctl
