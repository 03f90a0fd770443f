// The last place a failed message can go when the error queue refuses it:
// a local file, one JSON object per line (the wire headers, the body and
// the fault), so an operator can inspect or replay it. Written rarely, by
// the consumer that failed to park the message; appends are whole lines.
#pragma once

#include <string>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/fault.hpp"

namespace bus::detail {

// Appends `msg` with `fault` to <directory>/<endpoint>.dead-letters.jsonl,
// creating the directory if needed. Returns the file's path.
[[nodiscard]] result<std::string> append_dead_letter(const std::string& directory,
                                                     const std::string& endpoint,
                                                     const envelope& msg,
                                                     const fault_details& fault);

} // namespace bus::detail
