// What a replayed message carries: which headers of the error-queue copy go
// back to the original queue, and what busctl adds. Pure, so the rules are
// unit-tested without a broker; docs/busctl.md explains each one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bus/replay_headers.hpp"
#include "bus/time.hpp"
#include "queued_message.hpp"

namespace bus::ctl {

// The headers busctl writes on a replayed message are named in
// bus/header_names.hpp (header::replayed_at, replay_count, replayed_from).

// Which headers a replay keeps: the bus's rules, for every transport.
using bus::kept_on_replay;

// bus::replay_additions with the message's own replay count.
[[nodiscard]] std::vector<std::pair<std::string, std::string>>
replay_additions(const queued_message& m, time_point now, const std::string& source_queue);

// Where a replay sends the message: `to` when given (replay --to), else
// bus-fault-original-address, else `endpoint_queue`.
[[nodiscard]] std::string replay_destination(const queued_message& m,
                                             const std::string& endpoint_queue,
                                             const std::optional<std::string>& to = {});

// Why `m` may not be replayed to `destination`, empty if it may:
// bus::stream_replay_refusal on its fault headers.
[[nodiscard]] std::string replay_refusal(const queued_message& m, const std::string& destination);

} // namespace bus::ctl
