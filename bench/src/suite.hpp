// The benchmark suite: runs every case several times, each run in a
// process of its own, bus and raw CAF interleaved, takes the median of
// each figure, prints the table and writes the JSON.
#pragma once

#include <string>

namespace bench {

struct suite_options {
  int runs = 5;
  bool quick = false; // smaller sizes and 3 runs, for development
  int threads = 2;    // CAF worker threads of every case
  std::string json_path = "build/bench/results.json";
  std::string peer_script;  // the @node-ts/bus-core workload; empty: no peer
  std::string peer_modules; // its node_modules folder (NODE_PATH)
  std::string peer_package; // what was installed, e.g. "@node-ts/bus-core@1.3.3"
  std::string peer_status;  // why there is no peer figure, if there is none
  std::string revision;     // the commit measured, if known
  std::string rabbitmq_url; // a throwaway broker for the RabbitMQ cases; empty: not measured
  bool rabbitmq_only = false; // only the RabbitMQ cases (--only rabbitmq)
  // Only this revision's new cases (--only blocking): the blocking
  // handlers, the round trip beside them, and the 8-slot no-op throughput
  // row with its default-threads (dedicated) bus.
  bool blocking_only = false;
  // Only the outbox and inbox cases (--only outbox): SQLite, and
  // PostgreSQL when a server is given or started.
  bool outbox_only = false;
  // The PostgreSQL server of the outbox cases: an existing one (a libpq
  // connection string to its admin database, where each run creates a
  // database of its own), or, with both of the script and dir set (as
  // ./bus.sh bench does), a throwaway server started in that dir just
  // before the outbox cases and stopped right after them. Neither: the
  // PostgreSQL rows are not measured.
  std::string postgres_conninfo;
  std::string postgres_server_script;
  std::string postgres_server_dir;
  std::string rabbitmq_status = "not measured (./bus.sh bench starts a broker for it)";
  // With both set (as ./bus.sh bench does), the suite starts a throwaway
  // broker in rabbitmq_broker_dir with rabbitmq_broker_script just before
  // the RabbitMQ cases and stops it right after them; rabbitmq_url is then
  // the broker's.
  std::string rabbitmq_broker_script;
  std::string rabbitmq_broker_dir;
};

// Runs the suite; returns 0 (a figure never fails a run) unless the JSON
// cannot be written.
int run_suite(const suite_options& options);

} // namespace bench
