// The suite's outbox and inbox section: the bus with an outbox, the same
// handler without one (plain) and the raw loop, on SQLite and PostgreSQL,
// run after run in alternation; the commit-to-dispatch latency, the bytes
// of an inbox record, and a large cleanup beside a consumer. Kept apart
// from suite.cpp, which calls it, so that each file keeps one subject.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

// Runs one case of this program in a process of its own (the suite's
// case runner): the case's name and arguments, its JSON result.
using run_case_fn =
    std::function<nlohmann::json(const std::string&, const std::vector<std::string>&)>;

struct outbox_suite_options {
  int runs = 5;
  bool quick = false;
  // A PostgreSQL server's admin database; empty: its rows are not
  // measured, for the reason in postgres_status.
  std::string postgres_conninfo;
  std::string postgres_status;
};

[[nodiscard]] nlohmann::json outbox_section(const run_case_fn& run, const outbox_suite_options& o);
// The commit-to-dispatch latency on RabbitMQ (the bus row on SQLite, its
// sends confirmed by the broker at `url`), for section["rabbitmq"].
[[nodiscard]] nlohmann::json
outbox_rabbitmq_row(const run_case_fn& run, const outbox_suite_options& o, const std::string& url);
void print_outbox_table(const nlohmann::json& section);
// The goals, as the suite's target rows ({target, goal, measured, met}).
[[nodiscard]] nlohmann::json outbox_targets(const nlohmann::json& section);

} // namespace bench
