// The exit codes of busctl, the contract scripts rely on (docs/busctl.md).
// A command ends with exactly one of them; the numbers never change meaning.
#pragma once

namespace bus::ctl {

enum class exit_code : int {
  ok = 0,              // done: listed, shown, replayed or purged what was asked
  nothing_matched = 1, // an unknown message id, or a selection that matched no message
  usage = 2,           // bad arguments, or no usable connection settings
  unreachable = 3,     // the broker cannot be reached or refused the login; outbox: the
                       // store cannot be opened or read
  no_such_queue = 4,   // the queue to read does not exist on the broker
  failed = 5,          // the broker refused part of the work; what failed stays where it was
};

[[nodiscard]] constexpr int to_int(exit_code c) noexcept {
  return static_cast<int>(c);
}

} // namespace bus::ctl
