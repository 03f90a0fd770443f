// Running a scenario: on virtual time (CAF's test coordinator, through
// bus::testing::harness), where hours of redelivery take milliseconds and
// the output is the same on every run, or on the wall clock.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include "bus/error.hpp"
#include "bus/transport.hpp"
#include "scenario.hpp"

namespace bus::scenario {

enum class transport_kind { in_memory, rabbitmq };

struct run_options {
  bool real_time = false;
  transport_kind transport = transport_kind::in_memory;
  std::string url;                                 // rabbitmq
  std::chrono::seconds timeout{60};                // real time: give up after this long
  bool show_logs = false;                          // the bus's log lines to `err`
  std::optional<std::string> timeline_file;        // --timeline: the run drawn as SVG
};

// Exit codes of bus-scenario.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;  // the run went wrong: no start, time out, broker down
inline constexpr int exit_invalid = 2; // bad arguments, file or configuration
inline constexpr int exit_unmet = 3;   // it ran, and an expectation ("expect") did not hold

// Each prints the events and the summary to `out`, problems to `err`
// (prefixed with `file`), and returns the exit code.
int run_on_virtual_time(const scenario& s, const run_options& options, const std::string& file,
                        std::ostream& out, std::ostream& err);
int run_on_real_time(const scenario& s, const run_options& options, const std::string& file,
                     std::ostream& out, std::ostream& err);

// The transport a wall-clock run uses. errc::invalid_configuration when the
// program was built without the one asked for.
[[nodiscard]] result<transport_ptr> make_transport(const run_options& options);

} // namespace bus::scenario
