#include "bus/policy/rule_set.hpp"

#include <algorithm>
#include <utility>

#include "bus/policy/resilience.hpp"

namespace bus {

namespace {

bool same_target(const rule& a, const rule& b) {
  if (a.type.has_value() != b.type.has_value())
    return false;
  return !a.type || *a.type == *b.type;
}

// The rules of one registered type that catches the exception.
struct type_group {
  std::size_t type; // index into rule_set::types_
  std::vector<std::size_t> rules;
};

// Most specific first: repeatedly take the first group (in registration
// order) that no remaining group derives from. Derivation between distinct
// types is a strict partial order, so such a group always exists; unrelated
// types (siblings under multiple inheritance) keep registration order, as
// catch blocks would. `derives(a, b)`: type a is type b or derives from it.
template <class Derives>
std::vector<type_group> most_specific_first(std::vector<type_group> groups, Derives derives) {
  std::vector<type_group> ordered;
  ordered.reserve(groups.size());
  while (!groups.empty()) {
    auto next = std::find_if(groups.begin(), groups.end(), [&](const type_group& candidate) {
      return std::none_of(groups.begin(), groups.end(), [&](const type_group& other) {
        return &other != &candidate && derives(other.type, candidate.type);
      });
    });
    if (next == groups.end()) // unreachable for a partial order; keep the loop finite anyway
      next = groups.begin();
    ordered.push_back(std::move(*next));
    groups.erase(next);
  }
  return ordered;
}

} // namespace

std::string_view to_string(match_verdict verdict) noexcept {
  switch (verdict) {
    case match_verdict::matched:
      return "matched";
    case match_verdict::predicate_false:
      return "predicate_false";
    case match_verdict::predicate_threw:
      return "predicate_threw";
    case match_verdict::not_consulted:
      return "not_consulted";
  }
  return "unknown";
}

rule_set& rule_set::add_resilience() {
  return add_resilience([](policy_builder& p) { p.on_any().retry().then_redeliver(); });
}

rule_set& rule_set::add_resilience(const std::function<void(policy_builder&)>& configure) {
  policy_builder builder;
  configure(builder);
  // Added only once the callback has returned, so a callback that throws
  // leaves the set as it was.
  for (auto& r : builder.rules_)
    add(std::move(r));
  return *this;
}

rule_set& rule_set::add(rule r) {
  if (!r.predicate) {
    rules_.erase(
        std::remove_if(rules_.begin(), rules_.end(),
                       [&](const rule& old) { return !old.predicate && same_target(old, r); }),
        rules_.end());
  }
  if (r.type)
    type_index(*r.type);
  rules_.push_back(std::move(r));
  // Indexes shift when a rule is replaced; looked up again, by type_info.
  type_of_.clear();
  for (const auto& each : rules_)
    type_of_.push_back(each.type ? type_index(*each.type) : no_type);
  return *this;
}

std::size_t rule_set::type_index(const detail::exception_type& type) {
  const auto known = std::find(types_.begin(), types_.end(), type);
  if (known != types_.end())
    return static_cast<std::size_t>(known - types_.begin());
  const std::size_t old_count = types_.size();
  const std::size_t count = old_count + 1;
  std::vector<bool> derived(count * count, false);
  for (std::size_t a = 0; a < old_count; ++a)
    for (std::size_t b = 0; b < old_count; ++b)
      derived[a * count + b] = derived_[a * old_count + b];
  for (std::size_t other = 0; other < old_count; ++other) {
    derived[old_count * count + other] = type.is_same_or_derived_from(types_[other]);
    derived[other * count + old_count] = types_[other].is_same_or_derived_from(type);
  }
  derived[old_count * count + old_count] = true;
  types_.push_back(type);
  derived_ = std::move(derived);
  return old_count;
}

rule_match rule_set::match(const std::exception_ptr& exception) const {
  return match(caught_exception(exception));
}

rule_match rule_set::match(const caught_exception& thrown) const {
  rule_match result;
  if (!thrown)
    return result;

  // Each registered type is tested once: the groups of the types that
  // catch the exception, in registration order, and the catch-all.
  enum class verdict : unsigned char { untested, catches, declines };
  std::vector<verdict> tested(types_.size(), verdict::untested);
  std::vector<type_group> groups;
  std::vector<std::size_t> catch_all;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const std::size_t t = type_of_[i];
    if (t == no_type) {
      catch_all.push_back(i);
      continue;
    }
    if (tested[t] == verdict::untested) {
      const bool catches = types_[t].matches(thrown);
      tested[t] = catches ? verdict::catches : verdict::declines;
      if (catches)
        groups.push_back(type_group{t, {}});
    }
    if (tested[t] == verdict::catches)
      std::find_if(groups.begin(), groups.end(), [&](const type_group& g) { return g.type == t; })
          ->rules.push_back(i);
  }

  const std::type_info* thrown_type = thrown.type();
  auto consult = [&](const std::vector<std::size_t>& indexes, int rank, bool exact) {
    // The rules with a predicate first, in registration order, then the
    // fallback without one.
    for (const bool with_predicate : {true, false}) {
      for (const std::size_t i : indexes) {
        const rule& r = rules_[i];
        if (static_cast<bool>(r.predicate) != with_predicate)
          continue;
        match_candidate candidate{i, rank, exact, match_verdict::not_consulted};
        if (!result.rule) {
          if (!r.predicate) {
            candidate.verdict = match_verdict::matched;
          } else {
            try {
              candidate.verdict =
                  r.predicate(thrown) ? match_verdict::matched : match_verdict::predicate_false;
            } catch (...) {
              candidate.verdict = match_verdict::predicate_threw;
            }
          }
          if (candidate.verdict == match_verdict::matched)
            result.rule = i;
        }
        result.candidates.push_back(candidate);
      }
    }
  };

  const std::size_t count = types_.size();
  const auto ordered = most_specific_first(std::move(groups), [&](std::size_t a, std::size_t b) {
    return static_cast<bool>(derived_[a * count + b]);
  });
  int rank = 0;
  for (const auto& group : ordered) {
    consult(group.rules, rank, thrown_type != nullptr && *thrown_type == types_[group.type].info());
    ++rank;
  }
  consult(catch_all, rank, false);
  return result;
}

std::string rule_set::name_of(std::size_t index) const {
  if (index >= rules_.size())
    return "rule #?";
  return "rule #" + std::to_string(index + 1) + " " + describe_target(rules_[index]);
}

} // namespace bus
