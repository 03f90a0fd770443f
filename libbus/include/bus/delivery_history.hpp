// What a delivered message says about its own past, read in one place with
// bounds. Its headers come from outside the process (another version of
// the bus, a tool, a user's hand), so every value is checked: a count that
// is negative, not a number or huge neither resets nor overflows the
// attempt budget, a time is never before the epoch nor after now, and a
// held-back fault is honoured only when it is this endpoint's own.
//
// The consumer reads the history once per delivery and writes it back on
// the redelivery copy:
//
//   auto history = bus::read_delivery_history(msg, endpoint_name, now);
//   for (const auto& note : history.notes) log.warn("message {}: {}", id, note);
//   if (history.pending_fault) { /* to the error queue, no handler */ }
//   context.total_attempts = history.total_attempts(attempt);
//   context.first_failure = history.first_failure;
//   ...
//   auto copy = bus::with_failed_delivery(msg, history, attempt);
//
// and holds a failed message back with with_pending_fault(), which the
// reader accepts on this endpoint only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/fault.hpp"
#include "bus/time.hpp"

namespace bus {

// The most failed attempts a message can report: enough for any real
// policy (a rule with 1,000 redeliveries of 100 retries), small enough that
// adding the attempts of one delivery cannot overflow an int.
inline constexpr int max_failed_attempts = 1'000'000;

struct delivery_history {
  // Failed attempts of earlier deliveries (bus-failed-attempts), in
  // [0, max_failed_attempts]: 0 when the header is absent; the value when it
  // is a number in range; max_failed_attempts when it is larger (so the
  // budget is spent, not restarted); the message's delivery count (each
  // redelivery followed at least one failure), at most
  // max_failed_attempts, when it is negative or not a number.
  int failed_attempts = 0;
  // The header was there but not a number in [0, max_failed_attempts].
  bool failed_attempts_out_of_bounds = false;

  // When the message first failed (bus-first-failure-at, Unix ms): `now`
  // when the header is absent or not a number; the epoch when it is before
  // the epoch; `now` when it is after now (or beyond the year 2200).
  time_point first_failure{};
  // The header was there but not a time in [the epoch, now].
  bool first_failure_out_of_bounds = false;

  // The fault of a message this endpoint held back earlier because no
  // error queue would take it (bus-fault-pending naming this endpoint, and
  // every fault header with_pending_fault() writes well formed): the message
  // goes to the error queue with it, without running its handler. Its `at`
  // is bounded like first_failure.
  std::optional<fault_details> pending_fault;
  // bus-fault-pending was there but is not this endpoint's held-back
  // fault (another endpoint's name, an old "1", fault headers that do not
  // parse): the header is ignored and the handler runs, as for any
  // message. The runtime should drop the header from what it sends on.
  bool foreign_fault_pending = false;

  // One sentence per value found out of bounds or ignored, naming the
  // header, its text (cut to 64 bytes) and what was used instead, for the
  // runtime's log. Empty for a well-formed history.
  std::vector<std::string> notes;

  // Failed attempts in all once `attempts_this_delivery` more have failed
  // (error_context::total_attempts); saturates instead of overflowing.
  [[nodiscard]] int total_attempts(int attempts_this_delivery) const noexcept;
};

// Reads the history of `message` as delivered to `endpoint` at `now`.
// Pure; never throws for any header content.
[[nodiscard]] delivery_history read_delivery_history(const envelope& message,
                                                     std::string_view endpoint, time_point now);

// The copy of `message` to redeliver after `attempts_this_delivery` more
// failed attempts: delivery count + 1 (saturating), bus-first-failure-at
// and bus-failed-attempts written from `history` (the latter saturating at
// max_failed_attempts).
[[nodiscard]] envelope with_failed_delivery(envelope message, const delivery_history& history,
                                            int attempts_this_delivery);

// `message` held back with `fault`: the fault headers, and bus-fault-pending
// naming fault.endpoint, which is what read_delivery_history() accepts on
// that endpoint. Use it and nothing else to mark a held-back fault.
[[nodiscard]] envelope with_pending_fault(envelope message, const fault_details& fault,
                                          const fault_limits& limits = {});

// The fault headers of `message` read strictly, for a fault that decides
// what happens to it: every header with_fault_headers() writes present, the
// exception type not empty, the counts numbers in range (immediate retries
// in [0, max_failed_attempts], the delivery count a 32-bit unsigned) and
// bus-fault-at a time from_iso8601() reads (after `now`: `now`). Fails with
// errc::malformed_message naming the first header that does not parse.
[[nodiscard]] result<fault_details> read_fault_headers(const envelope& message, time_point now);

} // namespace bus
