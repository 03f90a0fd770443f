// The throwaway broker of a test run (scripts/rabbitmq-test-broker.sh,
// started by the ctest fixture "rabbitmq"): its URLs and its rabbitmqctl,
// read from the broker.env file in $BUS_TEST_BROKER_DIR. A test that finds
// no broker FAILS: these tests are never skipped for want of one.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bus/rabbitmq_transport.hpp"

namespace bus::test {

// The value of `key` in the broker's env file; FAILs the test if the file
// or the key is missing.
inline std::string broker_env(const std::string& key) {
  const char* dir = std::getenv("BUS_TEST_BROKER_DIR");
  if (dir == nullptr || *dir == '\0')
    FAIL("BUS_TEST_BROKER_DIR is not set: run the RabbitMQ tests through ctest, whose fixture "
         "starts the broker (scripts/rabbitmq-test-broker.sh start DIR)");
  std::string path = std::string(dir) + "/broker.env";
  if (!std::ifstream(path))
    FAIL("no " << path
               << ": the broker did not start (see the test 'rabbitmq: start a "
                  "throwaway broker')");
  // As `source broker.env` reads it: the script quotes what a shell would
  // not take literally (a URL with '&', a path with a space).
  auto value = env_file_value(path, key);
  if (!value)
    FAIL(value.error().message);
  return *value;
}

// Names no other test, run or process uses: queues and message types of a
// test never see another's messages.
inline std::string unique_name(const std::string& base) {
  static std::atomic<unsigned> counter{0};
  static const auto run = std::to_string(std::random_device{}() % 1000000);
  return "test." + run + "." + std::to_string(counter++) + "." + base;
}

// Collects the transport's log lines (from its I/O threads) for tests that
// check what it reported.
class log_capture {
public:
  rabbitmq_log_sink sink() {
    return [this](rabbitmq_log_level, const std::string& line) {
      std::lock_guard<std::mutex> guard(mutex_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return lines_;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Settings for the test broker: the URL under `url_key` with test-sized
// delay levels (100 ms units, 8 levels: up to 25.5 s) and short timeouts.
inline rabbitmq_settings test_settings(const std::string& url_key = "BUS_RABBITMQ_URL") {
  auto parsed = parse_rabbitmq_url(broker_env(url_key));
  if (!parsed)
    FAIL("the broker's URL does not parse: " << parsed.error().message);
  auto s = std::move(*parsed);
  s.delay_unit = std::chrono::milliseconds(100);
  s.delay_levels = 8;
  s.heartbeat = std::chrono::seconds(5);
  s.operation_timeout = std::chrono::seconds(10);
  s.connection_name = "bus tests";
  return s;
}

inline std::shared_ptr<rabbitmq_transport> connect_transport(rabbitmq_settings s) {
  auto t = rabbitmq_transport::connect(std::move(s));
  if (!t)
    FAIL("cannot connect to the test broker: " << t.error().message);
  return std::move(*t);
}

inline std::shared_ptr<rabbitmq_transport> connect_transport() {
  return connect_transport(test_settings());
}

// A transport with the bus's own defaults (not test_settings' short delay
// levels and timeouts), its log silenced: what a user's bus would connect.
inline std::shared_ptr<rabbitmq_transport> connect_with_defaults() {
  auto parsed = parse_rabbitmq_url(broker_env("BUS_RABBITMQ_URL"));
  if (!parsed)
    FAIL("the broker's URL does not parse: " << parsed.error().message);
  parsed->log = [](rabbitmq_log_level, const std::string&) {};
  return connect_transport(std::move(*parsed));
}

// A command's exit and output, kept so that a failure says why.
struct command_output {
  bool ok = false;  // it exited 0
  std::string text; // stdout and stderr together
};

inline command_output output_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((command + " 2>&1").c_str(), "r"), ::pclose);
  REQUIRE(pipe);
  command_output out;
  char buffer[4096];
  while (auto n = std::fread(buffer, 1, sizeof buffer, pipe.get()))
    out.text.append(buffer, n);
  out.ok = ::pclose(pipe.release()) == 0;
  return out;
}

// The program broker.env names under `key`, with `args` (quoted by the
// caller for the shell).
inline command_output run_broker_tool(const std::string& key, const std::string& args) {
  return output_of(broker_env(key) + " " + args);
}

// rabbitmqctl on the test broker, e.g. rabbitmqctl({"close_all_connections", ...}).
// Returns its exit status. Each call starts an Erlang VM: about a second.
inline int rabbitmqctl(const std::string& args) {
  auto command = broker_env("BUS_RABBITMQ_CTL") + " " + args + " >/dev/null 2>&1";
  return std::system(command.c_str());
}

// `rabbitmqctl list_queues -q name <columns>` on the test broker: one row
// per queue of the vhost "/", its name first, then the columns' values as
// text. FAILs if rabbitmqctl fails.
inline std::vector<std::vector<std::string>> list_queues(const std::string& columns) {
  auto command = broker_env("BUS_RABBITMQ_CTL") + " list_queues -q --no-table-headers name "
                 + columns + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe)
    FAIL("cannot run " << command);
  std::string output;
  char buffer[4096];
  while (auto n = std::fread(buffer, 1, sizeof buffer, pipe.get()))
    output.append(buffer, n);
  if (::pclose(pipe.release()) != 0)
    FAIL(command << " failed: " << output);
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    std::string field;
    while (fields >> field)
      row.push_back(field);
    if (!row.empty())
      rows.push_back(std::move(row));
  }
  return rows;
}

// What `rabbitmqctl list_queues -q name messages` says: every queue of the
// vhost "/" with its messages, ready and delivered but unacknowledged
// together, and on a quorum queue the dead letters it still holds (an AMQP
// passive declare counts the ready ones only). FAILs if rabbitmqctl fails.
inline std::map<std::string, long> queue_depths() {
  std::map<std::string, long> depths;
  for (const auto& row : list_queues("messages")) {
    // A line that does not end in a count is not a queue.
    char* end = nullptr;
    if (row.size() == 2) {
      long messages = std::strtol(row[1].c_str(), &end, 10);
      if (end != row[1].c_str() && *end == '\0')
        depths[row[0]] = messages;
    }
  }
  return depths;
}

} // namespace bus::test
