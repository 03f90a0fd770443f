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
  const detail::exception_type* type;
  std::vector<std::size_t> rules;
};

// Most specific first: repeatedly take the first group (in registration
// order) that no remaining group derives from. Derivation between distinct
// types is a strict partial order, so such a group always exists; unrelated
// types (siblings under multiple inheritance) keep registration order, as
// catch blocks would.
std::vector<type_group> most_specific_first(std::vector<type_group> groups) {
  std::vector<type_group> ordered;
  ordered.reserve(groups.size());
  while (!groups.empty()) {
    auto next = std::find_if(groups.begin(), groups.end(), [&](const type_group& candidate) {
      return std::none_of(groups.begin(), groups.end(), [&](const type_group& other) {
        return &other != &candidate && other.type->is_same_or_derived_from(*candidate.type);
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
  rules_.push_back(std::move(r));
  return *this;
}

rule_match rule_set::match(const std::exception_ptr& exception) const {
  rule_match result;
  if (!exception)
    return result;

  std::vector<type_group> groups;
  std::vector<std::type_index> declined; // types already known not to catch it
  std::vector<std::size_t> catch_all;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const rule& r = rules_[i];
    if (!r.type) {
      catch_all.push_back(i);
      continue;
    }
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const type_group& g) { return *g.type == *r.type; });
    if (group != groups.end()) {
      group->rules.push_back(i);
      continue;
    }
    if (std::find(declined.begin(), declined.end(), r.type->id()) != declined.end())
      continue;
    if (r.type->catches(exception))
      groups.push_back(type_group{&*r.type, {i}});
    else
      declined.push_back(r.type->id());
  }

  const std::type_info* thrown = detail::thrown_type(exception);
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
                  r.predicate(exception) ? match_verdict::matched : match_verdict::predicate_false;
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

  const auto ordered = most_specific_first(std::move(groups));
  int rank = 0;
  for (const auto& group : ordered) {
    consult(group.rules, rank, thrown != nullptr && *thrown == group.type->info());
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
