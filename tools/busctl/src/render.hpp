// What busctl prints on standard output, per command: an aligned table for
// people, or one JSON document for scripts (--json). Pure: reports in, text
// out. Problems (unknown ids, refused messages) are described by
// problem_lines() for standard error, so standard output stays parseable.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports.hpp"
#include "selection.hpp"

namespace bus::ctl {

// -- JSON ----------------------------------------------------------------------

[[nodiscard]] nlohmann::json list_json(const queue_listing& l);
[[nodiscard]] nlohmann::json groups_json(const queue_listing& l);
[[nodiscard]] nlohmann::json show_json(const std::string& queue, const queued_message& m);
[[nodiscard]] nlohmann::json replay_json(const replay_report& r);
[[nodiscard]] nlohmann::json purge_json(const purge_report& r);
// {"error": {"exit_code": 3, "message": "..."}}, for a command that failed.
[[nodiscard]] nlohmann::json error_json(exit_code code, const std::string& message);

// Indented JSON text; bytes that are not UTF-8 (a binary body) become U+FFFD
// instead of failing the output.
[[nodiscard]] std::string to_text(const nlohmann::json& doc);

// -- text ----------------------------------------------------------------------

[[nodiscard]] std::string list_text(const queue_listing& l);
[[nodiscard]] std::string groups_text(const queue_listing& l);
[[nodiscard]] std::string show_text(const std::string& queue, const queued_message& m);
[[nodiscard]] std::string replay_text(const replay_report& r);
[[nodiscard]] std::string purge_text(const purge_report& r);

// Lines for standard error: ids not found, messages the broker refused,
// consumers that hide messages, a --limit that cut the reading short.
[[nodiscard]] std::vector<std::string> problem_lines(const replay_report& r);
[[nodiscard]] std::vector<std::string> problem_lines(const purge_report& r);
[[nodiscard]] std::vector<std::string> notes(const std::string& queue, std::uint32_t consumers,
                                             bool truncated);

} // namespace bus::ctl
