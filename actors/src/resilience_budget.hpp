// The runtime side of issue 14's retry budget and deadlines, in one place:
// which budget an endpoint charges (its own, or one shared by name across
// endpoints), stamping a send's deadline, and what a consumer does with
// an expired message and with a retry the budget refuses. The arithmetic
// and the fallbacks are libbus's (bus/policy/retry_budget.hpp,
// bus/deadline.hpp); this file only wires them in.
//
// Where the budget lives: consumers decide on their own threads, so the
// cheapest correct place is a thread-safe libbus object that every
// consumer of the endpoint (and of the endpoints sharing it) calls
// directly: one short lock per first attempt and per retry decided, no
// message hop to the endpoint actor, which owns the rate limiter and is
// told of attempts asynchronously (too late to refuse a retry).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bus/endpoint_builder.hpp"
#include "bus/policy/retry_budget.hpp"

namespace bus {
struct send_options;
}

namespace bus::detail {

// The budgets shared by name, made once when the bus is built.
using shared_budgets = std::map<std::string, std::shared_ptr<retry_budget>>;

// The effective budget settings of `def` given the bus's options, if any.
[[nodiscard]] std::optional<retry_budget_settings>
budget_settings_of(const endpoint_definition& def, const recoverability_options& bus_options);

// The named budgets of `endpoints`, and the mistakes in sharing them:
// endpoints that share a name must give the same settings. (A budget's
// own fields are validated with the rest of each endpoint's policy.)
[[nodiscard]] std::vector<std::string> make_shared_budgets(
  const std::vector<endpoint_definition>& endpoints, const recoverability_options& bus_options,
  shared_budgets& out);

// The budget `def` charges at this start: the shared one of its name
// (made here if an endpoint added later is the first to name it), a fresh
// one of its own, or none. The caller guards `shared`.
[[nodiscard]] std::shared_ptr<retry_budget>
budget_for(const endpoint_definition& def, const recoverability_options& bus_options,
           shared_budgets& shared);

// Stamps bus-expires-at on a message sent at `now` with `options`.
void stamp_deadline(envelope& env, const send_options& options, time_point now);

} // namespace bus::detail
