#include "bus/policy/validate.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace bus {

namespace {

std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty())
      out += "; ";
    out += p;
  }
  return out;
}

result<void> verdict(const std::vector<std::string>& problems) {
  if (problems.empty())
    return {};
  return error{errc::invalid_configuration, join(problems)};
}

std::string above_limit(const std::string& what) {
  return what + " is above the longest delay the bus schedules, "
         + to_short_string(max_scheduled_delay) + " ("
         + std::to_string(max_scheduled_delay / std::chrono::hours(24)) + " days)";
}

// "max delay 1h (the default) is below its base delay 10h; raise it with
// .max_delay(10h) or more on the redelivery stage": where the max delay
// came from, and the call that fixes it, unless no max delay can (the
// delay itself is above max_scheduled_delay, reported on its own).
std::string max_delay_below(const retry_schedule& schedule, bool redelivery,
                            const std::string& tier, const std::string& what, duration needed) {
  const duration default_max =
      redelivery ? redelivery_defaults::max_delay : retry_defaults::max_delay;
  std::string text = "max delay " + to_short_string(schedule.max_delay)
                     + (schedule.max_delay == default_max ? " (the default)" : "") + " is below "
                     + what;
  if (needed <= max_scheduled_delay)
    text += "; raise it with .max_delay(" + to_short_string(needed) + ") or more on the " + tier
            + " stage";
  return text;
}

void check_schedule(const retry_schedule& schedule, bool redelivery, const std::string& where,
                    std::vector<std::string>& problems) {
  const std::string tier = redelivery ? "redelivery" : "retry";
  auto problem = [&](const std::string& text) { problems.push_back(where + tier + " " + text); };
  const bool max_valid = schedule.max_delay >= duration::zero();
  if (!max_valid)
    problem("max delay is " + to_short_string(schedule.max_delay) + "; it must not be negative");

  struct check {
    const retry_schedule& schedule;
    bool redelivery;
    const std::string& tier;
    bool max_valid;
    decltype(problem)& report;

    void count(int n) const {
      if (n < 0)
        report("count is " + std::to_string(n) + "; it must be 0 or more");
    }
    void operator()(const backoff_delays& d) const {
      count(d.count);
      if (d.base < duration::zero()) {
        report("base delay is " + to_short_string(d.base) + "; it must not be negative");
        return;
      }
      if (d.base > max_scheduled_delay)
        report(above_limit("base delay " + to_short_string(d.base)));
      if (max_valid && schedule.max_delay < d.base)
        report(max_delay_below(schedule, redelivery, tier,
                               "its base delay " + to_short_string(d.base), d.base));
    }
    void operator()(const interval_delays& d) const {
      if (d.intervals.empty()) {
        report("interval list is empty; give at least one interval");
        return;
      }
      const duration longest = *std::max_element(d.intervals.begin(), d.intervals.end());
      bool above_max_reported = false;
      for (std::size_t i = 0; i < d.intervals.size(); ++i) {
        const auto interval = d.intervals[i];
        const auto number = std::to_string(i + 1);
        if (interval < duration::zero()) {
          report("interval #" + number + " is " + to_short_string(interval)
                 + "; it must not be negative");
          continue;
        }
        if (interval > max_scheduled_delay)
          report(above_limit("interval #" + number + " (" + to_short_string(interval) + ")"));
        if (max_valid && interval > schedule.max_delay && !above_max_reported) {
          report(max_delay_below(schedule, redelivery, tier,
                                 "interval #" + number + " (" + to_short_string(interval) + ")",
                                 longest));
          above_max_reported = true;
        }
      }
    }
    void operator()(const exception_delays& d) const {
      count(d.count);
      if (!d.compute)
        report("delay function is empty");
    }
  };
  std::visit(check{schedule, redelivery, tier, max_valid, problem}, schedule.delays);
  if (schedule.max_delay > max_scheduled_delay)
    problem(above_limit("max delay " + to_short_string(schedule.max_delay)));
}

// "endpoint scope, rule #2 on<http_error>(predicate): ", what a problem
// of rule `i` starts with.
std::string where_is(const rule_set& rules, std::optional<scope_level> scope, std::size_t i) {
  return (scope ? std::string(to_string(*scope)) + " scope, " : std::string()) + rules.name_of(i)
         + ": ";
}

void check_rules(const rule_set& rules, std::optional<scope_level> scope,
                 std::vector<std::string>& problems) {
  for (std::size_t i = 0; i < rules.rules().size(); ++i) {
    const rule& r = rules.rules()[i];
    const std::string where = where_is(rules, scope, i);
    if (!has_action(r))
      problems.push_back(
          where + "no action; end the chain with retry, redeliver, dead_letter or discard");
    if (r.retry)
      check_schedule(*r.retry, false, where, problems);
    if (r.redelivery)
      check_schedule(*r.redelivery, true, where, problems);
    if (r.max_attempts && *r.max_attempts < 1)
      problems.push_back(where + "max_attempts is " + std::to_string(*r.max_attempts)
                         + "; it must be 1 or more");
    if (r.max_time && *r.max_time <= duration::zero())
      problems.push_back(where + "max_time is " + to_short_string(*r.max_time)
                         + "; it must be positive");
  }
}

} // namespace

result<void> validate(const rule_set& rules, std::optional<scope_level> scope) {
  std::vector<std::string> problems;
  check_rules(rules, scope, problems);
  return verdict(problems);
}

result<void> validate(const recoverability_scopes& scopes) {
  std::vector<std::string> problems;
  for (const auto scope : {scope_level::host, scope_level::bus, scope_level::transport,
                           scope_level::endpoint, scope_level::consumer}) {
    if (const auto* rules = scopes.find(scope))
      check_rules(*rules, scope, problems);
  }
  return verdict(problems);
}

result<void> validate_for_stream(const resolved_rules& resolved) {
  std::vector<std::string> problems;
  const auto& rules = resolved.rules;
  for (std::size_t i = 0; i < rules.rules().size(); ++i) {
    const rule& r = rules.rules()[i];
    if (!r.retry && !r.redelivery)
      continue;
    const char* asks = r.retry && r.redelivery ? "retries and redelivers"
                       : r.retry               ? "retries"
                                               : "redelivers";
    problems.push_back(where_is(rules, resolved.scope, i) + asks
                       + ", which a message read from a stream may not (every reader would "
                         "read it again); end the rule with dead_letter() or discard(), in a "
                         "scope of the stream endpoint's own if the rule is shared");
  }
  return verdict(problems);
}

result<void> validate(const recoverability_options& options) {
  std::vector<std::string> problems;
  if (options.max_retry_time <= duration::zero())
    problems.push_back("max_retry_time is " + to_short_string(options.max_retry_time)
                       + "; it must be positive");
  if (options.retry_budget)
    for (auto& m : mistakes(*options.retry_budget))
      problems.push_back(std::move(m));
  return verdict(problems);
}

} // namespace bus
