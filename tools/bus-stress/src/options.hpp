// What a stress run does, from the command line. Every knob has a default
// that makes a short, busy run; parse() names every mistake it finds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stress {

// The policies an endpoint may draw (see topology.cpp for what each does).
enum class policy_kind { retry, redeliver, dead_letter, discard, max_attempts, by_type };

[[nodiscard]] const char* to_string(policy_kind kind) noexcept;

struct options {
  int endpoints = 8;
  int min_slots = 1; // each endpoint draws its slots from [min_slots, max_slots]
  int max_slots = 8;
  std::uint64_t messages = 20'000;   // sent in all (the cap in duration mode too)
  std::optional<int> duration_ms;    // send for this long instead of a fixed count
  std::uint64_t window = 1'000;      // deliveries sent and not yet ended, at most
  double failure_rate = 0.2;         // per handler attempt
  double death_rate = 0.0;           // per actor-served attempt: kills its consumer
  double actor_share = 0.25;         // share of messages served by a handler actor
  double publish_share = 0.02;       // share of messages published to every endpoint
  std::vector<policy_kind> policies; // the pool endpoints draw from
  int outage_ms = 0;                 // every handler fails this long, from 25% of the run
  int rate_limit_threshold = 0;      // consecutive failures that trip it; 0: off
  int rate_limit_wait_ms = 20;
  int work_us = 100;      // a handler sleeps up to this long, so slots overlap
  int threads = 8;        // CAF worker threads: more than slots, so slots limit
  std::uint64_t seed = 0; // 0: drawn from the OS (and printed)
  int max_seconds = 60;   // the run fails if it takes longer
  std::string transport = "in_memory";
  std::string url; // the broker, for --transport rabbitmq (or from --broker-env)
  std::string log_file; // the bus's log lines; empty: dropped
};

struct parsed {
  std::optional<options> value; // empty: not a run (help, or mistakes)
  std::vector<std::string> mistakes;
  bool help = false;
};

[[nodiscard]] parsed parse(int argc, char** argv);

[[nodiscard]] std::string usage();

} // namespace stress
