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

void check_schedule(const retry_schedule& schedule, const std::string& tier,
                    const std::string& where, std::vector<std::string>& problems) {
  auto problem = [&](const std::string& text) { problems.push_back(where + tier + " " + text); };
  const bool max_valid = schedule.max_delay >= duration::zero();
  if (!max_valid)
    problem("max delay is " + to_short_string(schedule.max_delay) + "; it must not be negative");

  struct check {
    const retry_schedule& schedule;
    bool max_valid;
    decltype(problem)& report;

    void count(int n) const {
      if (n < 0)
        report("count is " + std::to_string(n) + "; it must be 0 or more");
    }
    void operator()(const backoff_delays& d) const {
      count(d.count);
      if (d.base < duration::zero())
        report("base delay is " + to_short_string(d.base) + "; it must not be negative");
      else if (max_valid && schedule.max_delay < d.base)
        report("max delay " + to_short_string(schedule.max_delay) + " is below its base delay "
               + to_short_string(d.base));
    }
    void operator()(const interval_delays& d) const {
      if (d.intervals.empty()) {
        report("interval list is empty; give at least one interval");
        return;
      }
      bool above_max_reported = false;
      for (std::size_t i = 0; i < d.intervals.size(); ++i) {
        const auto interval = d.intervals[i];
        const auto number = std::to_string(i + 1);
        if (interval < duration::zero()) {
          report("interval #" + number + " is " + to_short_string(interval)
                 + "; it must not be negative");
        } else if (max_valid && interval > schedule.max_delay && !above_max_reported) {
          report("max delay " + to_short_string(schedule.max_delay) + " is below interval #"
                 + number + " (" + to_short_string(interval) + ")");
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
  std::visit(check{schedule, max_valid, problem}, schedule.delays);
}

void check_rules(const rule_set& rules, std::optional<scope_level> scope,
                 std::vector<std::string>& problems) {
  for (std::size_t i = 0; i < rules.rules().size(); ++i) {
    const rule& r = rules.rules()[i];
    const std::string where = (scope ? std::string(to_string(*scope)) + " scope, " : std::string())
                              + rules.name_of(i) + ": ";
    if (!has_action(r))
      problems.push_back(
          where + "no action; end the chain with retry, redeliver, dead_letter or discard");
    if (r.retry)
      check_schedule(*r.retry, "retry", where, problems);
    if (r.redelivery)
      check_schedule(*r.redelivery, "redelivery", where, problems);
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

result<void> validate(const recoverability_options& options) {
  std::vector<std::string> problems;
  if (options.max_retry_time <= duration::zero())
    problems.push_back("max_retry_time is " + to_short_string(options.max_retry_time)
                       + "; it must be positive");
  return verdict(problems);
}

} // namespace bus
