// Runs the built busctl program (BUSCTL_PROGRAM) as a script would, and
// seeds error queues on the test broker, for busctl's broker tests.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker.hpp"
#include "support/eventually.hpp"
#include "bus/envelope.hpp"
#include "bus/fault.hpp"
#include "bus/header_names.hpp"

namespace bus::ctl::test {

using bus::test::eventually;

struct run_result {
  int code = -1;
  std::string out;
  std::string err;

  // Standard output as the one JSON document --json promises; FAILs if it is not.
  nlohmann::json json() const {
    auto doc = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded())
      FAIL("busctl's output is not JSON:\n" << out << "\nstderr:\n" << err);
    return doc;
  }
};

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// busctl ARGS with BUS_RABBITMQ_URL set to `env_url` (unset when empty).
inline run_result run_busctl(const std::vector<std::string>& args, const std::string& env_url = {}) {
  static const std::string dir = [] {
    char name[] = "/tmp/busctl-test-XXXXXX";
    if (::mkdtemp(name) == nullptr)
      FAIL("cannot create a temporary folder");
    return std::string(name);
  }();
  static int runs = 0;
  auto base = dir + "/run" + std::to_string(++runs);
  std::string command =
    env_url.empty() ? "env -u BUS_RABBITMQ_URL " : "env BUS_RABBITMQ_URL=" + shell_quote(env_url) + " ";
  command += shell_quote(BUSCTL_PROGRAM);
  for (const auto& a : args)
    command += " " + shell_quote(a);
  command += " >" + base + ".out 2>" + base + ".err";
  int status = std::system(command.c_str());
  run_result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  ::unlink((base + ".out").c_str());
  ::unlink((base + ".err").c_str());
  return r;
}

// The test broker's URL (with its password: guest).
inline std::string broker_url() {
  return bus::test::broker_env("BUS_RABBITMQ_URL");
}

// busctl ARGS --url <the test broker> --json, which must exit `expected`.
inline nlohmann::json busctl_json(std::vector<std::string> args, int expected = 0) {
  args.push_back("--url");
  args.push_back(broker_url());
  args.push_back("--json");
  auto r = run_busctl(args);
  INFO("busctl stderr: " << r.err);
  REQUIRE(r.code == expected);
  return r.json();
}

// A message as the bus moves it to an error queue after `exception` failed it.
inline envelope failed_copy(const std::string& id, const std::string& type,
                            const std::string& exception, const std::string& original_address) {
  envelope e;
  e.message_id = id;
  e.message_type = type;
  e.sent_at = std::chrono::system_clock::now();
  e.delivery_count = 3;
  e.body = message_body::text(R"({"order_id":")" + id + R"(","amount":-1})");
  e.headers.set("tenant", "acme");
  e.headers.set(header::failed_attempts, "7");
  e.headers.set(header::first_failure_at, "1700000000000");
  fault_details f;
  f.exception = {exception, "it failed"};
  f.reason = "retries exhausted";
  f.at = std::chrono::system_clock::now();
  f.host = "test-host";
  f.process = "test";
  f.endpoint = original_address;
  f.original_address = original_address;
  f.immediate_retries = 2;
  f.delivery_count = 3;
  return with_fault_headers(std::move(e), f);
}

// The ids in a `list --json` document, head first.
inline std::vector<std::string> ids_of(const nlohmann::json& listing) {
  std::vector<std::string> out;
  for (const auto& m : listing.at("messages"))
    out.push_back(m.at("id").get<std::string>());
  return out;
}

} // namespace bus::ctl::test
