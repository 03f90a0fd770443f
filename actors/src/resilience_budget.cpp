#include "resilience_budget.hpp"

#include <algorithm>

#include "bus/bus.hpp"
#include "bus/deadline.hpp"

namespace bus::detail {

std::optional<retry_budget_settings>
budget_settings_of(const endpoint_definition& def, const recoverability_options& bus_options) {
  return def.retry_budget ? def.retry_budget : bus_options.retry_budget;
}

std::vector<std::string> make_shared_budgets(const std::vector<endpoint_definition>& endpoints,
                                             const recoverability_options& bus_options,
                                             shared_budgets& out) {
  std::vector<std::string> mistakes;
  std::map<std::string, std::pair<std::string, retry_budget_settings>> first; // name -> endpoint
  for (const auto& def : endpoints) {
    auto settings = budget_settings_of(def, bus_options);
    if (!settings)
      continue;
    if (settings->name.empty())
      continue;
    auto [it, fresh] = first.emplace(settings->name, std::make_pair(def.name, *settings));
    if (!fresh && !(it->second.second == *settings))
      mistakes.push_back("endpoint '" + def.name + "': retry budget '" + settings->name
                         + "' is shared with endpoint '" + it->second.first
                         + "' with other settings (" + describe(*settings) + " against "
                         + describe(it->second.second) + ")");
  }
  for (const auto& [name, entry] : first)
    out.emplace(name, std::make_shared<retry_budget>(entry.second));
  return mistakes;
}

std::shared_ptr<retry_budget> budget_for(const endpoint_definition& def,
                                         const recoverability_options& bus_options,
                                         shared_budgets& shared) {
  auto settings = budget_settings_of(def, bus_options);
  if (!settings)
    return nullptr;
  if (settings->name.empty())
    return std::make_shared<retry_budget>(*settings);
  auto& budget = shared[settings->name];
  if (!budget)
    budget = std::make_shared<retry_budget>(*settings);
  return budget;
}

void stamp_deadline(envelope& env, const send_options& options, time_point now) {
  std::optional<time_point> at = options.expires_at;
  if (options.time_to_live) {
    // A time to live beyond the range a header holds is no deadline at all.
    const auto ttl = std::max(*options.time_to_live, duration::zero());
    if (ttl < std::chrono::hours(24 * 365 * 100)) {
      const auto by_ttl = now + ttl;
      at = at ? std::min(*at, by_ttl) : by_ttl;
    }
  }
  if (at)
    set_expires_at(env, *at);
}

} // namespace bus::detail
