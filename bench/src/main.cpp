// bus-bench: the benchmarks of the bus against the raw layer beneath it.
//
//   bus-bench suite [--runs N] [--quick] [--only rabbitmq|blocking|outbox] [--rabbitmq-url U]
//                   [--json FILE] [--rabbitmq-broker-script S --rabbitmq-broker-dir D]
//                   [--postgres-server-script S --postgres-server-dir D | --postgres-conninfo C]
//                   [--peer-script F --peer-modules D
//                    --peer-package P | --peer-status TEXT] [--revision R]
//       every case, each run a process of its own; prints the table, writes the JSON
//   bus-bench throughput|retry_path|redelivery|blocking [--impl bus|raw] [--name value ...]
//   bus-bench blocked_round_trip [--impl busy|idle] [--name value ...]
//   bus-bench adaptive --slots N|adaptive [--capacity 8 --base-us 5000 --messages 2000]
//   bus-bench outbox --store sqlite|postgres [--conninfo C] [--impl bus|plain|raw] ...
//   bus-bench outbox_cleanup --store sqlite|postgres [--conninfo C] --records N ...
//   bus-bench rabbitmq_send|rabbitmq_async_send|rabbitmq_consume --url amqp://... [--impl bus|raw]
//   ...
//       one run of one case; prints its result as one JSON line
#include <cstdio>
#include <cstring>
#include <iostream>

#include "measure.hpp"
#include "suite.hpp"
#include "workload.hpp"

namespace bench {

case_args::case_args(int argc, char** argv, int first) {
  for (int i = first; i + 1 < argc; i += 2)
    if (std::strncmp(argv[i], "--", 2) == 0)
      values_[argv[i] + 2] = argv[i + 1];
}

std::string case_args::text(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t case_args::number(const std::string& name, std::int64_t fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : std::stoll(it->second);
}

double case_args::real(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : std::stod(it->second);
}

} // namespace bench

namespace {

int suite(int argc, char** argv) {
  bench::suite_options o;
  bench::case_args args(argc, argv, 2);
  o.quick = args.text("quick", "no") != "no";
  o.runs = static_cast<int>(args.number("runs", o.quick ? 3 : 5));
  o.threads = static_cast<int>(args.number("threads", 2));
  o.json_path = args.text("json", o.json_path);
  o.peer_script = args.text("peer-script", "");
  o.peer_modules = args.text("peer-modules", "");
  o.peer_package = args.text("peer-package", "@node-ts/bus-core");
  o.peer_status = args.text("peer-status", "not run (./bus.sh bench --peer runs it)");
  o.revision = args.text("revision", "");
  o.rabbitmq_url = args.text("rabbitmq-url", "");
  o.rabbitmq_only = args.text("only", "") == "rabbitmq";
  o.blocking_only = args.text("only", "") == "blocking";
  o.outbox_only = args.text("only", "") == "outbox";
  o.postgres_conninfo = args.text("postgres-conninfo", "");
  o.postgres_server_script = args.text("postgres-server-script", "");
  o.postgres_server_dir = args.text("postgres-server-dir", "");
  o.rabbitmq_status = args.text("rabbitmq-status", o.rabbitmq_status);
  o.rabbitmq_broker_script = args.text("rabbitmq-broker-script", "");
  o.rabbitmq_broker_dir = args.text("rabbitmq-broker-dir", "");
  return bench::run_suite(o);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::cerr << "usage: bus-bench suite [--runs N] [--quick yes] [--json FILE] ...\n"
                 "       bus-bench throughput|retry_path|redelivery|blocking [--impl bus|raw] ...\n"
                 "       bus-bench blocked_round_trip [--impl busy|idle] ...\n"
                 "       bus-bench outbox|outbox_cleanup --store sqlite|postgres ...\n";
    return argc < 2 ? 2 : 0;
  }
  std::string name = argv[1];
  try {
    if (name == "suite")
      return suite(argc, argv);
    bench::case_args args(argc, argv, 2);
    bench::case_result result;
    if (name == "throughput") {
      result = bench::run_throughput(args);
    } else if (name == "blocking") {
      result = bench::run_blocking(args);
    } else if (name == "adaptive") {
      result = bench::run_adaptive(args);
    } else if (name == "blocked_round_trip") {
      result = bench::run_blocked_round_trip(args);
    } else if (name == "outbox") {
      result = bench::run_outbox(args);
    } else if (name == "outbox_cleanup") {
      result = bench::run_outbox_cleanup(args);
    } else if (name == "retry_path") {
      result = bench::run_retry_path(args);
    } else if (name == "redelivery") {
      if (args.text("measure", "memory") == "memory")
        bench::single_arena(); // before any thread: mallinfo2 must see them all
      result = bench::run_redelivery(args);
#ifdef BUS_BENCH_WITH_RABBITMQ
    } else if (name == "rabbitmq_send") {
      result = bench::run_rabbitmq_send(args);
    } else if (name == "rabbitmq_consume") {
      result = bench::run_rabbitmq_consume(args);
    } else if (name == "rabbitmq_async_send") {
      result = bench::run_rabbitmq_async_send(args);
#endif
    } else {
      std::cerr << "bus-bench: unknown case '" << name << "'\n";
      return 2;
    }
    std::cout << result.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bus-bench: " << name << ": " << e.what() << "\n";
    return 1;
  }
}
