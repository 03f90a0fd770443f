#include "bus/policy/explain.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "bus/policy/decide.hpp"
#include "bus/policy/exception_type.hpp"

namespace bus {

namespace {

// Always the middle of the range: rng.unit() is exactly 0.5, so every
// jittered delay equals its nominal delay (see apply_jitter).
struct midpoint_generator {
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() const noexcept { return result_type{1} << 63; }
};

// The longest elapsed time the plan tracks: beyond it a system_clock time
// point (nanoseconds) would overflow. Centuries; no real policy gets there.
constexpr auto plan_horizon =
    std::chrono::duration_cast<duration>(std::chrono::hours(24 * 365 * 200));

duration advance(duration elapsed, duration delay) {
  const auto step = std::clamp(delay, duration::zero(), plan_horizon);
  return std::min(elapsed + step, plan_horizon);
}

std::string scope_phrase(const std::optional<scope_level>& scope) {
  return scope ? "the " + std::string(to_string(*scope)) + " scope" : "no scope";
}

std::string why_this_rule(const recoverability_config& config, const rule_match& match) {
  const auto& winner =
      *std::find_if(match.candidates.begin(), match.candidates.end(),
                    [&](const match_candidate& c) { return c.rule == *match.rule; });
  const rule& r = config.rules.rules()[winner.rule];
  std::string why =
      config.rules.name_of(winner.rule) + " of " + scope_phrase(config.scope) + " matches";
  if (!r.type)
    why += " as the catch-all";
  else if (winner.exact_type)
    why += ": it names the thrown type";
  else
    why += ": its type is a base of the thrown type";
  if (r.type) {
    why += winner.rank == 0
               ? ", the most specific registered type that catches it"
               : ", " + std::to_string(winner.rank) + " more specific registered type(s) declined";
  }
  if (r.predicate)
    why += "; its predicate holds";
  const auto declined =
      std::count_if(match.candidates.begin(), match.candidates.end(), [](const match_candidate& c) {
        return c.verdict == match_verdict::predicate_false
               || c.verdict == match_verdict::predicate_threw;
      });
  if (declined > 0)
    why += "; " + std::to_string(declined) + " rule(s) consulted before it declined";
  return why;
}

// Why the policy treats `exception` as it does, and whether a rule of the
// set is what decides (rather than the unrecoverable list, or nothing).
struct verdict {
  std::string reason;
  bool rule_decides = false;
};

verdict why(const recoverability_config& config, const caught_exception& exception,
            const rule_match& match, std::string_view thrown) {
  if (!exception)
    return {"no exception: the error queue"};
  if (exception.is<message_deserialization_error>())
    return {"a message that cannot be deserialized always goes to the error queue"};
  if (const auto* declared = config.options.unrecoverable.find(exception))
    return {std::string(thrown) + " is unrecoverable (declared as " + declared->name()
            + "): the error queue at once"};
  if (match.rule)
    return {why_this_rule(config, match), true};
  if (!config.scope)
    return {"no scope defines exception policy rules: every failure goes to the error queue"};
  return {"no rule of " + scope_phrase(config.scope) + " matches " + std::string(thrown)
          + ": the error queue"};
}

} // namespace

explanation explain(const recoverability_config& config, const std::exception_ptr& exception) {
  explanation out;
  out.scope = config.scope;
  const caught_exception thrown(exception);
  out.exception_type = thrown.type_name();

  const auto match = config.rules.match(thrown);
  for (const auto& c : match.candidates)
    out.candidates.push_back(
        considered_rule{c.rule, config.rules.name_of(c.rule), c.rank, c.exact_type, c.verdict});
  auto [reason, rule_decides] = why(config, thrown, match, out.exception_type);
  out.reason = std::move(reason);
  if (rule_decides) {
    out.rule = match.rule;
    const auto& decides = config.rules.rules()[*match.rule];
    out.rule_text = describe(decides);
    out.trips = decides.trips;
    if (!decides.trips.empty()) {
      std::string names;
      for (const auto& name : decides.trips)
        names += (names.empty() ? "'" : ", '") + name + "'";
      const bool chain = decides.retry || decides.redelivery || decides.terminal;
      out.dependency_clause =
          "each failure counts against dependency " + names
          + (chain ? "; once its breaker is open (or this failure opens it) the message goes back "
                     "to its queue unharmed, no attempt spent; while it stays closed the plan "
                     "below applies"
                   : "; the rule has no chain of its own, so every failure goes back to its "
                     "queue unharmed, no attempt spent, and the plan below never runs");
    }
  }
  if (config.options.custom)
    out.reason += "; a custom policy decides, the plan shows what it does";

  out.retry_budget = config.options.retry_budget;
  out.expired_messages = config.options.expired_messages;

  midpoint_generator midpoint;
  const time_point first_failure{};
  error_context context = error_context_for(thrown);
  context.first_failure = first_failure;
  duration elapsed{};
  for (int attempt = 1;; ++attempt) {
    if (attempt > explain_plan_limit) {
      out.truncated = true;
      break;
    }
    context.total_attempts = attempt;
    context.now = first_failure + elapsed;
    action next = decide(config, context, midpoint);
    out.plan.push_back(planned_attempt{attempt, context.delivery_count, context.immediate_attempts,
                                       elapsed, next});
    struct step {
      error_context& context;
      duration& elapsed;
      bool operator()(const immediate_retry& r) const {
        ++context.immediate_attempts;
        elapsed = advance(elapsed, r.delay);
        return true;
      }
      bool operator()(const delayed_retry& r) const {
        ++context.delivery_count;
        context.immediate_attempts = 1;
        elapsed = advance(elapsed, r.delay);
        return true;
      }
      bool operator()(const move_to_error&) const { return false; }
      bool operator()(const discard&) const { return false; }
    };
    if (!std::visit(step{context, elapsed}, next))
      break;
  }
  return out;
}

std::string to_string(const explanation& e) {
  std::string out;
  out += "scope: " + (e.scope ? std::string(to_string(*e.scope)) : std::string("none")) + "\n";
  out += "exception: " + e.exception_type + "\n";
  out += "rule: " + (e.rule ? e.rule_text : std::string("none")) + "\n";
  out += "why: " + e.reason + "\n";
  if (!e.dependency_clause.empty())
    out += "dependencies: " + e.dependency_clause + "\n";
  for (const auto& c : e.candidates)
    out += "  considered " + c.name + ": rank " + std::to_string(c.rank)
           + (c.exact_type ? ", exact type" : "") + ", " + std::string(to_string(c.verdict)) + "\n";
  for (const auto& p : e.plan)
    out += "attempt " + std::to_string(p.attempt) + " (delivery " + std::to_string(p.delivery)
           + ", try " + std::to_string(p.immediate_attempt) + ") fails at " + to_hms(p.elapsed)
           + " -> " + describe(p.then) + "\n";
  if (e.truncated)
    out += "... the plan stops after " + std::to_string(explain_plan_limit) + " attempts\n";
  if (e.retry_budget)
    out += "retries charged to the " + describe(*e.retry_budget) + "\n";
  if (e.expired_messages == expired_action::dead_letter)
    out += "expired messages: dead-lettered with reason 'expired', never run\n";
  return out;
}

} // namespace bus
