// Stamping a new message: id, type, time, source and conversation. Shared
// by sends from outside the bus and from inside a handler.
#pragma once

#include <string>

#include "bus/envelope.hpp"

namespace bus::detail {

// A fresh random message id. Ids need uniqueness, not reproducibility, so
// this draws from a per-thread generator seeded once from the OS.
[[nodiscard]] std::string new_message_id();

// An envelope around `body` (typed; its type names the message), from
// `source`, sent at `now`.
[[nodiscard]] envelope make_envelope(message_body body, std::string source, time_point now);

} // namespace bus::detail
