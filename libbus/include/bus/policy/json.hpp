// Exception policies described as JSON, so the runtime logs the effective
// policy of every endpoint once at start, and explain() can be printed by
// tools. Description only: a policy holds code (predicates, delay
// functions) and is not read back from JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "bus/policy/action.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/explain.hpp"
#include "bus/policy/rule.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/policy/schedule.hpp"

namespace bus {

// nlohmann's to_json hooks: `nlohmann::json j = config;` works. Durations
// are integers in milliseconds under keys ending in "_ms".
void to_json(nlohmann::json& j, const retry_schedule& schedule);
void to_json(nlohmann::json& j, const rule& r);
void to_json(nlohmann::json& j, const rule_set& rules);
void to_json(nlohmann::json& j, const recoverability_config& config);
void to_json(nlohmann::json& j, const action& a);
void to_json(nlohmann::json& j, const explanation& e);

} // namespace bus
