// The rules of one scope and the matching that picks one of them for an
// exception: the most specific type wins whatever the registration order,
// as with catch blocks; among rules for one type, the first whose predicate
// holds, then the one without predicate.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/policy/rule.hpp"

namespace bus {

class policy_builder;

enum class match_verdict {
  matched,         // this rule decides
  predicate_false, // its type caught the exception, its predicate did not hold
  predicate_threw, // its predicate threw: counts as not holding
  not_consulted,   // its type caught the exception but a rule before it matched
};

[[nodiscard]] std::string_view to_string(match_verdict verdict) noexcept;

// A rule whose type catches the exception, and what came of it.
struct match_candidate {
  std::size_t rule = 0; // index into rule_set::rules()
  // The specificity rank of the rule's type among the registered types that
  // catch this exception: 0 for the most specific, one more for each
  // registered type in between; the catch-all ranks last.
  int rank = 0;
  // Whether the rule names the very type that was thrown (false for the
  // catch-all, and where the ABI cannot tell).
  bool exact_type = false;
  match_verdict verdict = match_verdict::not_consulted;
};

struct rule_match {
  // The index of the rule that decides; empty: no rule matches, the message
  // goes to the error queue.
  std::optional<std::size_t> rule;
  // Every rule that caught the exception, in the order consulted.
  std::vector<match_candidate> candidates;
};

class rule_set {
public:
  // No rules: every failure goes to the error queue.
  rule_set() = default;

  // Mocha's parameterless AddResilience(): a catch-all that retries with the
  // defaults, then redelivers with the defaults.
  rule_set& add_resilience();

  // Runs `configure` with a builder; the rules it creates are added in the
  // order of their on<E>() calls, as add() does. Calls accumulate: a later
  // call adds to, or replaces rules of, an earlier one. Stage objects the
  // builder hands out are valid only during `configure`.
  rule_set& add_resilience(const std::function<void(policy_builder&)>& configure);

  // Appends `r`. Last write wins: a rule without predicate replaces the
  // rule without predicate of the same type (and the catch-all replaces the
  // catch-all); rules with a predicate never replace one another.
  rule_set& add(rule r);

  // In registration order, replaced rules removed.
  [[nodiscard]] const std::vector<rule>& rules() const noexcept { return rules_; }
  [[nodiscard]] bool empty() const noexcept { return rules_.empty(); }

  // The rule that decides for `exception`:
  //  1. the registered types that catch it are ranked most specific first
  //     (a type deriving from another comes before it; unrelated types, as
  //     with multiple inheritance, in registration order); the catch-all
  //     comes last;
  //  2. within a type, the rules with a predicate in registration order,
  //     the first that holds wins; then the rule without predicate;
  //  3. a type whose rules all decline passes to the next type.
  // An empty pointer matches nothing. Never throws what a predicate throws.
  // Rethrows `thrown` for no test when it derives from std::exception, once
  // per registered type otherwise; ranks types without a throw (the ranks
  // are worked out as rules are added).
  [[nodiscard]] rule_match match(const caught_exception& thrown) const;
  // The same, looking into `exception` first (one rethrow).
  [[nodiscard]] rule_match match(const std::exception_ptr& exception) const;

  // "rule #2 on<http_error>(predicate)", for reasons and error messages.
  [[nodiscard]] std::string name_of(std::size_t index) const;

private:
  static constexpr std::size_t no_type = static_cast<std::size_t>(-1);

  // The index of `type` in types_, added (and ranked against the others,
  // two throws per type already there) if it is new.
  std::size_t type_index(const detail::exception_type& type);

  std::vector<rule> rules_;
  // Every type a rule has named, in order of first appearance, and for each
  // pair whether the first is the same as or derives from the second:
  // derived_[a * types_.size() + b]. Kept as rules are added, so match()
  // ranks types by looking up, not by throwing.
  std::vector<detail::exception_type> types_;
  std::vector<bool> derived_;
  // Per rule in rules_: its type's index in types_, or no_type (catch-all).
  std::vector<std::size_t> type_of_;
};

} // namespace bus
