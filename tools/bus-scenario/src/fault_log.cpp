#include "fault_log.hpp"

#include <nlohmann/json.hpp>

#include "bus/fault_event.hpp"
#include "exception_types.hpp"
#include "naming_transport.hpp"

namespace bus::scenario {

namespace {

std::string quoted(const std::string& text) { return nlohmann::json(text).dump(); }

// The failures of one expectation against the one fault raised for its message.
void compare(const fault_expectation& e, const raised_fault& f, std::vector<std::string>& out) {
  auto differs = [&](const char* field, const std::optional<std::string>& want,
                     const std::string& got) {
    if (want && *want != got)
      out.push_back(e.path + "." + field + ": expected " + quoted(*want) + ", the fault says "
                    + quoted(got));
  };
  differs("exception", e.exception, f.exception_type);
  differs("exception_message", e.exception_message, f.exception_message);
  differs("endpoint", e.endpoint, f.endpoint);
  if (e.reason_contains && f.reason.find(*e.reason_contains) == std::string::npos)
    out.push_back(e.path + ".reason_contains: " + quoted(*e.reason_contains)
                  + " is not in the fault's reason " + quoted(f.reason));
  auto count_differs = [&](const char* field, const std::optional<int>& want, long long got) {
    if (want && *want != got)
      out.push_back(e.path + "." + field + ": expected " + std::to_string(*want)
                    + ", the fault says " + std::to_string(got));
  };
  count_differs("immediate_retries", e.immediate_retries, f.immediate_retries);
  count_differs("delivery_count", e.delivery_count, f.delivery_count);
}

} // namespace

std::optional<raised_fault> read_fault(const envelope& e, const message_names& names) {
  // fault_name() makes "fault<" + name + ">".
  if (e.message_type.rfind("fault<", 0) != 0)
    return std::nullopt;
  auto text = e.body.to_json_text();
  if (!text)
    return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object())
    return std::nullopt;
  try {
    raised_fault f;
    auto id = j.at("message_id").get<std::string>();
    f.message = names.find(id).value_or(id);
    f.fault_type = e.message_type;
    f.exception_type = scenario_name_of(j.at("exception_type").get<std::string>());
    f.exception_message = j.at("exception_message").get<std::string>();
    f.reason = j.at("reason").get<std::string>();
    f.endpoint = j.at("endpoint").get<std::string>();
    f.immediate_retries = j.at("immediate_retries").get<int>();
    f.delivery_count = j.at("delivery_count").get<std::uint32_t>();
    return f;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

expectation_report check_faults(const std::vector<fault_expectation>& expected,
                                const std::vector<raised_fault>& raised) {
  expectation_report report;
  for (const auto& e : expected) {
    ++report.checked;
    std::vector<const raised_fault*> mine;
    for (const auto& f : raised)
      if (f.message == e.message)
        mine.push_back(&f);
    if (!e.raised) {
      if (!mine.empty())
        report.failures.push_back(e.path + ": expected no fault, but " + mine.front()->fault_type
                                  + " was raised (reason: " + quoted(mine.front()->reason) + ")");
      continue;
    }
    if (mine.empty()) {
      report.failures.push_back(e.path + ": no fault was raised for " + quoted(e.message));
      continue;
    }
    if (mine.size() > 1) {
      report.failures.push_back(e.path + ": " + std::to_string(mine.size())
                                + " faults were raised for " + quoted(e.message)
                                + ", the bus raises one per message");
      continue;
    }
    compare(e, *mine.front(), report.failures);
  }
  return report;
}

bool settle_expectations(const scenario& s, const std::vector<raised_fault>& raised,
                         nlohmann::ordered_json& summary, const std::string& file,
                         std::ostream& err) {
  if (s.expected_faults.empty())
    return true;
  auto report = check_faults(s.expected_faults, raised);
  for (const auto& failure : report.failures)
    err << file << ": " << failure << '\n';
  summary["summary"]["expectations"] = {{"checked", report.checked},
                                        {"failed", report.failures.size()}};
  return report.failures.empty();
}

} // namespace bus::scenario
