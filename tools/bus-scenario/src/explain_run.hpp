// bus-scenario --explain: what a scenario's endpoint does with an exception
// before anything runs. The bus is built from the file exactly as a run
// builds it (every scope, the unrecoverable list, budgets, time limits),
// never started; message_bus::explain gives the plan of the handler.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "scenario.hpp"

namespace bus::scenario {

struct explain_request {
  std::string endpoint;
  std::string message_type; // empty: the endpoint's only handler
  // A type name ("http_error") or a "throw" step as a script writes it:
  // {"throw": "http_error", "fields": {"status": 429}}.
  std::string exception;
  std::optional<std::string> svg_file; // also draw the plan there
  bool json = false;                   // the explanation as JSON, not text
};

// Prints the explanation to `out`, problems to `err` (prefixed with
// `file`); returns the exit code (exit_ok, or exit_invalid).
int explain_on_scenario(const scenario& s, const explain_request& request,
                        const std::string& file, std::ostream& out, std::ostream& err);

} // namespace bus::scenario
