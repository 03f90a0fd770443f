// Everything of the recoverability policy library in one include: the DSL,
// scopes, the decision, explain, validation and the JSON description.
#pragma once

#include "bus/policy/action.hpp"
#include "bus/policy/backoff.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/decide.hpp"
#include "bus/policy/error_context.hpp"
#include "bus/policy/explain.hpp"
#include "bus/policy/json.hpp"
#include "bus/policy/random.hpp"
#include "bus/policy/resilience.hpp"
#include "bus/policy/rule.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/policy/schedule.hpp"
#include "bus/policy/scopes.hpp"
#include "bus/policy/validate.hpp"
