// Runs one benchmark case in a process of its own, so that each run's peak
// memory is its own and no run inherits another's heap, and reads the JSON
// object it prints last on standard output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

// Runs `argv` (argv[0] is looked up on PATH) with `env` added to the
// environment. Returns the last JSON line of its output, or an object
// {"error": "..."} if it failed: a benchmark never stops the suite.
[[nodiscard]] nlohmann::json run_case_process(const std::vector<std::string>& argv,
                                              const std::map<std::string, std::string>& env = {});

// This program, to run its own cases.
[[nodiscard]] std::string self_path();

} // namespace bench
