// fault<T> events as a scenario sees them: the bus raises one when a message
// fails for good (to its fault address, else published), and the naming
// transport reads each as it goes out. A scenario's "expect": {"faults": ...}
// is checked against them once the run is over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/envelope.hpp"
#include "scenario.hpp"

namespace bus::scenario {

class message_names;

// What one fault<T> said, with the failed message named as the scenario
// names it.
struct raised_fault {
  std::string message;        // the scenario's name (the message id if unknown)
  std::string fault_type;     // "fault<order_placed>"
  std::string exception_type; // the scenario's name of the type, else its C++ name
  std::string exception_message;
  std::string reason;
  std::string endpoint;
  int immediate_retries = 0;
  std::uint32_t delivery_count = 0;
};

// The fault `e` carries, if `e` is a fault<T> event; nothing for any other
// message, or a fault whose body cannot be read.
[[nodiscard]] std::optional<raised_fault> read_fault(const envelope& e, const message_names& names);

// Checked expectations: how many, and a text for each that did not hold
// ("expect.faults.order-1.exception: expected \"http_error\", the fault
// says \"runtime_error\"").
struct expectation_report {
  std::size_t checked = 0;
  std::vector<std::string> failures;
};

// Checks every expectation against the faults that were raised.
[[nodiscard]] expectation_report check_faults(const std::vector<fault_expectation>& expected,
                                              const std::vector<raised_fault>& raised);

// The end of a run with expectations: checks those of `s` against `raised`,
// reports each failure on `err` as "<file>: <failure>", and adds
// "expectations": {"checked": n, "failed": m} to `summary` (the
// {"summary": {...}} object) when `s` has any. True if every one held.
bool settle_expectations(const scenario& s, const std::vector<raised_fault>& raised,
                         nlohmann::ordered_json& summary, const std::string& file,
                         std::ostream& err);

} // namespace bus::scenario
