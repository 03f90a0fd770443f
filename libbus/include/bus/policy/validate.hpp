// Validation of exception policies: a configuration that makes no sense is
// refused when the bus is built, every mistake reported at once, each
// naming its scope and rule.
#pragma once

#include <optional>

#include "bus/error.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/policy/scopes.hpp"

namespace bus {

// Refuses, with errc::invalid_configuration: a rule with no action; a
// negative retry or redelivery count; an empty interval list; a negative
// delay; a base delay, interval or maximum delay above
// max_scheduled_delay (365 days); a maximum delay below the base delay or
// below an interval (saying whether it is the tier's default and the
// .max_delay() call that fixes it); an empty delay function; a budget
// below one attempt; a time limit that is not positive. The message lists
// every mistake, "; "-separated, each as "<scope> scope, rule #2
// on<http_error>(predicate): retry max delay 100ms is below its base delay
// 200ms; raise it with .max_delay(200ms) or more on the retry stage".
[[nodiscard]] result<void> validate(const rule_set& rules,
                                    std::optional<scope_level> scope = std::nullopt);

// Every scope that defines rules, whether or not it wins resolution.
[[nodiscard]] result<void> validate(const recoverability_scopes& scopes);

// The rules that apply to an endpoint reading a stream, where a failed
// message may be neither retried nor redelivered (bus/stream.hpp): refuses
// every rule with an immediate retry or a redelivery tier, each named as
// above ("bus scope, rule #1 on_any(): retries and redelivers, which ...").
// Rules that dead-letter, discard or only trip a dependency pass.
[[nodiscard]] result<void> validate_for_stream(const resolved_rules& rules);

// A non-positive max_retry_time; a retry budget's mistakes (see
// mistakes(const retry_budget_settings&)).
[[nodiscard]] result<void> validate(const recoverability_options& options);

} // namespace bus
