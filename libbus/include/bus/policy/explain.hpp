// explain(): what a policy will do with an exception before any message
// fails: the rule that matches and why (specificity, predicate, scope), and
// the attempts and delays of a handler that always fails, jitter off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "bus/policy/action.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/time.hpp"

namespace bus {

// A rule whose type caught the exception, named, and what came of it.
struct considered_rule {
  std::size_t rule = 0; // index into the rule set
  std::string name;     // "rule #2 on<http_error>(predicate)"
  int rank = 0;         // as in match_candidate
  bool exact_type = false;
  match_verdict verdict = match_verdict::not_consulted;
};

// One failed attempt of the plan and what the policy does after it.
struct planned_attempt {
  int attempt = 1;               // 1-based, across deliveries
  std::uint32_t delivery = 0;    // redeliveries before it: 0 on the first delivery
  int immediate_attempt = 1;     // 1-based, within its delivery
  duration elapsed{};            // since the first failure, when it fails
  action then = move_to_error{}; // what follows its failure
};

struct explanation {
  std::optional<scope_level> scope; // the scope the rules came from
  std::string exception_type;       // the type as thrown
  // The rule that decides and its DSL text; empty when none does (no rule
  // matches, or the exception is unrecoverable).
  std::optional<std::size_t> rule;
  std::string rule_text;
  // One sentence: why this rule, or why no rule.
  std::string reason;
  // Every rule whose type caught the exception, in the order consulted.
  std::vector<considered_rule> candidates;
  // The attempts of a handler that always fails, through the real decide()
  // (custom policy and safety fallback included) with nominal delays: the
  // plan draws the middle of every jitter range, which is the nominal delay.
  std::vector<planned_attempt> plan;
  // True when the plan stopped at explain_plan_limit attempts before the
  // policy gave up.
  bool truncated = false;
  // The dependency breakers the deciding rule's failures count against
  // (rule::trips), and one sentence on what they change: the plan holds
  // only while they are closed.
  std::vector<std::string> trips;
  std::string dependency_clause;
  // The retry budget every retry of the plan is charged to, if any (the
  // plan assumes it has room), and what an expired message becomes.
  std::optional<retry_budget_settings> retry_budget;
  expired_action expired_messages = expired_action::discard;
};

inline constexpr int explain_plan_limit = 1000;

// Explains `config` for `exception`. The first failure is at an arbitrary
// fixed time and each attempt fails as soon as its delay is over, so time
// limits cut the plan where they would cut the real schedule. The context
// carries no message (a custom policy sees a null `message`). Never throws
// what user code throws.
[[nodiscard]] explanation explain(const recoverability_config& config,
                                  const std::exception_ptr& exception);

// The same for an exception object: explain(config, http_error{429}).
template <class E, class = std::enable_if_t<!std::is_same_v<std::decay_t<E>, std::exception_ptr>>>
[[nodiscard]] explanation explain(const recoverability_config& config, E&& exception) {
  return explain(config, std::make_exception_ptr(std::forward<E>(exception)));
}

// Several lines for people: scope, exception, rule, reason, then one line
// per attempt ("attempt 4 (delivery 0, try 4) fails at 00:00:01.400 ->
// delayed retry after 00:05:00").
[[nodiscard]] std::string to_string(const explanation& e);

} // namespace bus
