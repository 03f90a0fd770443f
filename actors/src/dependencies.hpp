// Which dependency breakers an endpoint pauses for, settled when the bus is
// built: the names it declares (depends_on) and those its handlers' rules
// trip, each of which the bus must declare. And the shared gates themselves,
// made once per bus from the declarations.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bus/dependency_breaker.hpp"
#include "bus/endpoint_builder.hpp"
#include "dependency_gate.hpp"

namespace bus::detail {

// Mistakes in the declarations themselves (a threshold out of range).
[[nodiscard]] std::vector<std::string>
dependency_setting_mistakes(const std::map<std::string, dependency_breaker_settings>& declared);

// Adds to def.dependencies every breaker a rule of its (resolved) handlers
// trips, without duplicates, and names every one the bus does not declare.
// Call after resolve_recoverability().
[[nodiscard]] std::vector<std::string>
resolve_dependencies(endpoint_definition& def,
                     const std::map<std::string, dependency_breaker_settings>& declared);

// One gate per declared dependency.
[[nodiscard]] std::shared_ptr<const dependency_gates>
make_gates(const std::map<std::string, dependency_breaker_settings>& declared);

} // namespace bus::detail
