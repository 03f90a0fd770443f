// The suite's adaptive-slots section (issue 23): on the simulated
// dependency of the adaptive case (capacity 8, 5 ms), a sweep of fixed slot
// counts and adaptive slots, run after run in alternation; the best fixed
// count is found by the sweep, and adaptive slots are compared with it and
// with slots(64). Kept apart from suite.cpp, which calls it.
#pragma once

#include <nlohmann/json.hpp>

#include "outbox_suite.hpp" // run_case_fn

namespace bench {

[[nodiscard]] nlohmann::json adaptive_section(const run_case_fn& run, int runs);
void print_adaptive_table(const nlohmann::json& section);
// The goals, as the suite's target rows ({target, goal, measured, met}).
[[nodiscard]] nlohmann::json adaptive_targets(const nlohmann::json& section);

} // namespace bench
