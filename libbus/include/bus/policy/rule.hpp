// One exception policy rule: which exceptions it matches (a type and its
// subtypes, optionally narrowed by a predicate) and its escalation chain:
// immediate retries, then redeliveries, then a terminal action.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/caught_exception.hpp"
#include "bus/policy/exception_type.hpp"
#include "bus/policy/schedule.hpp"
#include "bus/time.hpp"

namespace bus {

enum class terminal_action {
  dead_letter, // to the error queue
  discard,     // acknowledged and dropped, logged only
};

[[nodiscard]] std::string_view to_string(terminal_action action) noexcept;

// Rules are built by the DSL (resilience.hpp); the fields are public so that
// a custom policy, explain() and the JSON description can read them.
struct rule {
  // The exception type matched, with its subtypes; empty: any exception
  // whatsoever (on_any()), including those not derived from std::exception.
  std::optional<detail::exception_type> type;
  // Narrows the match. Called only with an exception already known to be of
  // `type`; it tests the typed object (caught_exception::visit_as, no
  // rethrow for an exception derived from std::exception). Empty: no
  // predicate. A predicate that throws counts as not matching.
  std::function<bool(const caught_exception&)> predicate;
  // Tier 1, in-process retries; empty: this rule does not retry.
  std::optional<retry_schedule> retry;
  // Tier 2, redeliveries through the scheduler; empty: no redelivery.
  std::optional<retry_schedule> redelivery;
  // What follows when the tiers are exhausted (at once when there are
  // none). Empty: the error queue, Mocha's "default" terminal;
  // then_dead_letter() states the same explicitly.
  std::optional<terminal_action> terminal;
  // Attempts in all, across both tiers and counting the first: the failure
  // of attempt number max_attempts ends the chain. Empty: the tiers decide.
  std::optional<int> max_attempts;
  // Retrying stops this long after the first failure. Empty: the
  // configuration's max_retry_time (24 h by default).
  std::optional<duration> max_time;
  // The dependencies (named circuit breakers, "inventory-db") that a
  // failure matched by this rule counts against. Whether the message then
  // follows the chain above or goes back to its queue unharmed depends on
  // the breaker: see docs/policies.md, "Dependency breakers". A rule with
  // no tier and no terminal action that trips gives every failure it
  // matches back to the queue unharmed. Empty: counts against none.
  std::vector<std::string> trips;
};

// Whether the rule says what to do at all (a tier or a terminal action).
[[nodiscard]] bool has_action(const rule& r) noexcept;

// What the rule matches, as written in the DSL: "on<http_error>()",
// "on<http_error>(predicate)", "on_any()".
[[nodiscard]] std::string describe_target(const rule& r);

// The whole rule as DSL text, e.g.
// "on<http_error>(predicate).retry(3, 500ms).then_redeliver({5min, 15min, 30min})".
// Settings that differ from their tier's defaults are spelled out
// (".jitter(false)", ".max_delay(10s)"), so the text says everything the
// rule does.
[[nodiscard]] std::string describe(const rule& r);

} // namespace bus
