#include "dependencies.hpp"

#include <algorithm>

namespace bus::detail {

std::vector<std::string>
dependency_setting_mistakes(const std::map<std::string, dependency_breaker_settings>& declared) {
  std::vector<std::string> out;
  for (const auto& [name, s] : declared) {
    auto where = "dependency '" + name + "': ";
    if (name.empty())
      out.push_back("a dependency has an empty name");
    if (s.consecutive_failures < 0)
      out.push_back(where + "consecutive_failures is " + std::to_string(s.consecutive_failures)
                    + "; it must be 0 (off) or more");
    if (s.failure_rate < 0 || s.failure_rate > 1)
      out.push_back(where + "failure_rate is " + std::to_string(s.failure_rate)
                    + "; it must be between 0 (off) and 1");
    if (s.consecutive_failures == 0 && s.failure_rate == 0)
      out.push_back(where + "both consecutive_failures and failure_rate are off; it would never open");
    if (s.failure_rate > 0 && s.window <= duration::zero())
      out.push_back(where + "window is " + to_hms(s.window) + "; it must be positive");
    if (s.minimum_calls < 1)
      out.push_back(where + "minimum_calls is " + std::to_string(s.minimum_calls)
                    + "; it must be 1 or more");
    if (s.open_wait <= duration::zero())
      out.push_back(where + "open_wait is " + to_hms(s.open_wait) + "; it must be positive");
  }
  return out;
}

std::vector<std::string>
resolve_dependencies(endpoint_definition& def,
                     const std::map<std::string, dependency_breaker_settings>& declared) {
  auto& deps = def.dependencies;
  auto add = [&](const std::string& name) {
    if (std::find(deps.begin(), deps.end(), name) == deps.end())
      deps.push_back(name);
  };
  std::vector<std::string> declared_here = deps;
  deps.clear();
  for (const auto& name : declared_here)
    add(name);
  for (const auto& slot : def.handlers)
    if (slot.recoverability)
      for (const auto& r : slot.recoverability->rules.rules())
        for (const auto& name : r.trips)
          add(name);
  std::vector<std::string> out;
  for (const auto& name : deps)
    if (declared.find(name) == declared.end())
      out.push_back("endpoint '" + def.name + "' depends on '" + name
                    + "', which the bus does not declare (call dependency(\"" + name + "\"))");
  return out;
}

std::shared_ptr<const dependency_gates>
make_gates(const std::map<std::string, dependency_breaker_settings>& declared) {
  auto gates = std::make_shared<dependency_gates>();
  for (const auto& [name, s] : declared)
    gates->emplace(name, std::make_shared<dependency_gate>(name, s));
  return gates;
}

} // namespace bus::detail
