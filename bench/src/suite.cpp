#include "suite.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <caf/config.hpp>
#include <nlohmann/json.hpp>

#include "adaptive_suite.hpp"
#include "medians.hpp"
#include "outbox_suite.hpp"
#include "postgres_server.hpp"
#include "subprocess.hpp"
#include "throwaway_broker.hpp"

namespace bench {

namespace {

using json = nlohmann::json;

// -- sizes --------------------------------------------------------------------

struct sizes {
  std::uint64_t throughput = 500'000;
  std::uint64_t peer = 20'000; // node-ts is two orders slower: its rate, not its count, matters
  std::uint64_t latency = 200'000;
  std::uint64_t retry = 1'000'000;
  std::uint64_t redelivery = 1'000'000;
  int slots_for_failures = 8;
  // RabbitMQ: a confirmed send costs a broker round trip, so one sender
  // gets fewer messages; enough for a second or more per run.
  std::uint64_t rabbitmq_one = 1'000;
  std::uint64_t rabbitmq_many = 10'000;
  // Blocking handlers: 25 rounds of every slot (2.5 s at the ideal rate);
  // the round trip: this many requests, 1 ms apart.
  int blocking_rounds = 25;
  int round_trip_requests = 2'000;
};

sizes sizes_for(const suite_options& o) {
  sizes s;
  if (o.quick) {
    s.throughput = 100'000;
    s.peer = 5'000;
    s.latency = 50'000;
    s.retry = 100'000;
    s.redelivery = 100'000;
    s.rabbitmq_one = 500;
    s.rabbitmq_many = 5'000;
    s.blocking_rounds = 10;
    s.round_trip_requests = 500;
  }
  return s;
}

const int slot_counts[] = {1, 2, 8, 64};
// The no-op throughput row also measured with the endpoint's default
// handler_threads (dedicated: a thread per slot), against the same raw runs.
const int dedicated_row_slots = 8;
// Blocking handlers: 10 ms each, on 2 CAF threads, at these slot counts;
// the round trip beside the larger one.
const int blocking_slots[] = {8, 64};
const int blocking_ms = 10;
const int round_trip_slots = 64;
// Concurrent senders (bus) = unconfirmed window (raw); prefetch = slots.
const std::vector<int> rabbitmq_senders{1, 8, 64};
const std::vector<int> rabbitmq_slots{1, 8, 64};
// Quorum queues on the three-node cluster: the middle rows only.
const std::vector<int> rabbitmq_cluster_senders{8};
const std::vector<int> rabbitmq_cluster_slots{8};
// The non-blocking send: one thread, this many in flight (bus) = the raw
// publisher's window of confirms. The raw consume "limit": this prefetch,
// one basic.ack(multiple) per quarter of it.
const int rabbitmq_async_window = 1000;
const int rabbitmq_limit_prefetch = 1000;
const int rabbitmq_limit_ack_every = 250;

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// -- running cases ------------------------------------------------------------

class case_runner {
public:
  explicit case_runner(const suite_options& o) : options_(o), self_(self_path()) {}

  // One run of a case of this program.
  json run(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {self_, name, "--threads", std::to_string(options_.threads)};
    argv.insert(argv.end(), args.begin(), args.end());
    return report(run_case_process(argv));
  }

  json run_peer(int concurrency, std::uint64_t messages) {
    return report(
        run_case_process({"node", options_.peer_script, "--concurrency",
                          std::to_string(concurrency), "--messages", std::to_string(messages)},
                         {{"NODE_PATH", options_.peer_modules}}));
  }

private:
  static json report(json r) {
    if (r.contains("error"))
      std::fprintf(stderr, "bus-bench: a run failed (left out of the medians): %s\n",
                   r["error"].get<std::string>().c_str());
    std::fprintf(stderr, ".");
    return r;
  }

  const suite_options& options_;
  std::string self_;
};

// The median of the top-level `key` over the runs that have it, or null.
json median(const std::vector<json>& runs, const std::string& key) {
  return median_at(runs, "/" + key);
}

json ratio(const json& a, const json& b) {
  if (!a.is_number() || !b.is_number() || b.get<double>() == 0)
    return nullptr;
  return a.get<double>() / b.get<double>();
}

double num(const json& j, double fallback = 0) {
  return j.is_number() ? j.get<double>() : fallback;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string k(const json& v) { // 1234567 -> "1235k"
  return v.is_number() ? fmt("%.0fk", v.get<double>() / 1000) : "-";
}
std::string x(const json& v) {
  return v.is_number() ? fmt("%.2f", v.get<double>()) : "-";
}
std::string us(const json& v) {
  return v.is_number() ? fmt("%.0f", v.get<double>()) : "-";
}
std::string mb(const json& v) {
  return v.is_number() ? fmt("%.0f", v.get<double>() / 1024) : "-";
}

// -- the machine --------------------------------------------------------------

std::string first_line_with(const std::string& file, const std::string& prefix) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0)
      return line;
  return {};
}

std::string after_colon(const std::string& line) {
  auto colon = line.find(':');
  if (colon == std::string::npos)
    return line;
  auto value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  return value;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

json machine(const suite_options& o) {
  auto mem_kb = std::atof(after_colon(first_line_with("/proc/meminfo", "MemTotal")).c_str());
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {{"nproc", std::thread::hardware_concurrency()},
          {"cpu", after_colon(first_line_with("/proc/cpuinfo", "model name"))},
          {"memory", fmt("%.1f GiB", mem_kb / 1024 / 1024)},
          {"caf_version", CAF_VERSION},
          {"caf_threads", o.threads},
          {"compiler", "g++ " __VERSION__},
          {"build", "Release (-O3 -DNDEBUG)"},
          {"date", date},
          {"revision", o.revision},
          {"load_average_at_start", load_average()}};
}

// -- the sections -------------------------------------------------------------

// The medians of one case's interleaved bus and raw runs, and their ratio.
json bus_against_raw(std::vector<json> bus_runs, std::vector<json> raw_runs) {
  json row = {{"bus_msgs_per_s", median(bus_runs, "msgs_per_s")},
              {"raw_msgs_per_s", median(raw_runs, "msgs_per_s")},
              {"bus_peak_rss_kb", median(bus_runs, "peak_rss_kb")},
              {"raw_peak_rss_kb", median(raw_runs, "peak_rss_kb")}};
  row["ratio_bus_to_raw"] = ratio(row["bus_msgs_per_s"], row["raw_msgs_per_s"]);
  row["runs"] = {{"bus", std::move(bus_runs)}, {"raw", std::move(raw_runs)}};
  return row;
}

json throughput_section(case_runner& run, const suite_options& o, const sizes& s) {
  json rows = json::array();
  for (int slots : slot_counts) {
    if (o.blocking_only && slots != dedicated_row_slots)
      continue;
    std::vector<json> bus_runs, raw_runs, peer_runs, dedicated_runs;
    auto args = std::vector<std::string>{"--slots", std::to_string(slots), "--messages",
                                         std::to_string(s.throughput)};
    for (int r = 0; r < o.runs; ++r) {
      bus_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--impl", "bus"}));
      raw_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--impl", "raw"}));
      if (slots == dedicated_row_slots)
        dedicated_runs.push_back(run.run(
            "throughput", args + std::vector<std::string>{"--impl", "bus", "--handler-threads",
                                                          "dedicated"}));
      if (!o.peer_script.empty())
        peer_runs.push_back(run.run_peer(slots, s.peer));
    }
    auto row = bus_against_raw(std::move(bus_runs), std::move(raw_runs));
    row["slots"] = slots;
    row["handler_threads"] = "caf_workers";
    if (!dedicated_runs.empty()) {
      json d = {{"bus_msgs_per_s", median(dedicated_runs, "msgs_per_s")},
                {"bus_peak_rss_kb", median(dedicated_runs, "peak_rss_kb")}};
      d["ratio_bus_to_raw"] = ratio(d["bus_msgs_per_s"], row["raw_msgs_per_s"]);
      d["ratio_to_caf_workers"] = ratio(d["bus_msgs_per_s"], row["bus_msgs_per_s"]);
      d["runs"] = dedicated_runs;
      row["dedicated"] = d;
    }
    row["messages"] = s.throughput;
    if (!o.peer_script.empty()) {
      row["peer_messages"] = s.peer;
      row["peer_msgs_per_s"] = median(peer_runs, "msgs_per_s");
      row["peer_peak_rss_kb"] = median(peer_runs, "peak_rss_kb");
      row["ratio_bus_to_peer"] = ratio(row["bus_msgs_per_s"], row["peer_msgs_per_s"]);
      row["runs"]["peer"] = peer_runs;
    }
    rows.push_back(row);
  }
  return rows;
}

// The cost of metrics: the no-op row at the dedicated row's slots, the bus
// with metrics on and off, runs interleaved in the same suite.
json metrics_section(case_runner& run, const suite_options& o, const sizes& s) {
  std::vector<json> off_runs, on_runs;
  auto args = std::vector<std::string>{"--impl", "bus", "--slots",
                                       std::to_string(dedicated_row_slots), "--messages",
                                       std::to_string(s.throughput)};
  for (int r = 0; r < o.runs; ++r) {
    off_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--metrics", "off"}));
    on_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--metrics", "on"}));
  }
  json row = {{"slots", dedicated_row_slots},
              {"messages", s.throughput},
              {"off_msgs_per_s", median(off_runs, "msgs_per_s")},
              {"on_msgs_per_s", median(on_runs, "msgs_per_s")}};
  row["ratio_on_to_off"] = ratio(row["on_msgs_per_s"], row["off_msgs_per_s"]);
  row["runs"] = {{"off", off_runs}, {"on", on_runs}};
  return row;
}

// The cost of an open page (issue 24): the metrics row's bus, serving its
// page, with a page polling it as a browser does against nobody looking,
// runs interleaved. Six times the throughput row's messages, so that each
// run lasts seconds and sees several polls.
json page_section(case_runner& run, const suite_options& o, const sizes& s) {
  std::vector<json> closed_runs, open_runs;
  auto messages = s.throughput * 6;
  auto args = std::vector<std::string>{"--impl", "bus", "--slots",
                                       std::to_string(dedicated_row_slots), "--messages",
                                       std::to_string(messages), "--metrics", "on"};
  for (int r = 0; r < o.runs; ++r) {
    closed_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--page", "off"}));
    open_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--page", "on"}));
  }
  json row = {{"slots", dedicated_row_slots},
              {"messages", messages},
              {"closed_msgs_per_s", median(closed_runs, "msgs_per_s")},
              {"open_msgs_per_s", median(open_runs, "msgs_per_s")},
              {"polls_per_run", median(open_runs, "page_polls")}};
  row["ratio_open_to_closed"] = ratio(row["open_msgs_per_s"], row["closed_msgs_per_s"]);
  row["runs"] = {{"closed", closed_runs}, {"open", open_runs}};
  return row;
}

// At half of the bus's peak for the same slots, for both sides: the same
// offered load.
json latency_section(case_runner& run, const suite_options& o, const sizes& s,
                     const json& throughput) {
  json rows = json::array();
  for (const auto& t : throughput) {
    auto rate = num(t["bus_msgs_per_s"]) / 2;
    if (rate <= 0)
      continue;
    std::vector<json> bus_runs, raw_runs;
    auto args = std::vector<std::string>{"--slots",    std::to_string(t["slots"].get<int>()),
                                         "--messages", std::to_string(s.latency),
                                         "--rate",     std::to_string(rate)};
    for (int r = 0; r < o.runs; ++r) {
      bus_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--impl", "bus"}));
      raw_runs.push_back(run.run("throughput", args + std::vector<std::string>{"--impl", "raw"}));
    }
    json row = {{"slots", t["slots"]}, {"messages", s.latency}, {"offered_msgs_per_s", rate}};
    for (auto [side, runs] : {std::pair{"bus", &bus_runs}, std::pair{"raw", &raw_runs}})
      row[side] = {{"p50_us", median(*runs, "p50_us")},
                   {"p99_us", median(*runs, "p99_us")},
                   {"p999_us", median(*runs, "p999_us")},
                   {"max_us", median(*runs, "max_us")},
                   {"achieved_msgs_per_s", median(*runs, "msgs_per_s")},
                   {"peak_rss_kb", median(*runs, "peak_rss_kb")}};
    row["ratio_p99_bus_to_raw"] = ratio(row["bus"]["p99_us"], row["raw"]["p99_us"]);
    row["runs"] = {{"bus", bus_runs}, {"raw", raw_runs}};
    rows.push_back(row);
  }
  return rows;
}

// Issue 14: the success path with resilience features configured against
// none, interleaved in one run (no-op handler, 8 slots, caf_workers). One
// row per variant; a later feature appends its variant here, e.g.
// {"retry_budget+breaker", "retry_budget,dependency_breaker"}.
const std::vector<std::pair<std::string, std::string>> resilience_variants = {
  {"none", "none"},
  {"retry_budget", "retry_budget"},
  {"dependency_breaker", "dependency_breaker"},
  {"both", "retry_budget,dependency_breaker"},
};
const int resilience_slots = 8;

json resilience_section(case_runner& run, const suite_options& o, const sizes& s) {
  std::map<std::string, std::vector<json>> runs;
  for (int r = 0; r < o.runs; ++r)
    for (const auto& [name, features] : resilience_variants)
      runs[name].push_back(run.run("throughput", {"--impl", "bus", "--slots",
                                                  std::to_string(resilience_slots), "--messages",
                                                  std::to_string(s.throughput), "--resilience",
                                                  features}));
  json out = {{"messages", s.throughput}, {"slots", resilience_slots}, {"rows", json::array()}};
  const auto baseline = median(runs["none"], "msgs_per_s");
  for (const auto& [name, features] : resilience_variants) {
    json row = {{"variant", name},
                {"features", features},
                {"msgs_per_s", median(runs[name], "msgs_per_s")},
                {"runs", runs[name]}};
    row["ratio_to_none"] = ratio(row["msgs_per_s"], baseline);
    out["rows"].push_back(std::move(row));
  }
  return out;
}

// retry_path on each side with --fail-every `every` and with 0 (all
// succeed), o.runs rounds in alternation, each with `args` besides:
// runs["bus/" + every], runs["bus/0"], runs["raw/" + every], runs["raw/0"].
std::map<std::string, std::vector<json>> retry_path_rounds(case_runner& run,
                                                           const suite_options& o,
                                                           const std::string& every,
                                                           const std::vector<std::string>& args) {
  std::map<std::string, std::vector<json>> runs;
  for (int r = 0; r < o.runs; ++r)
    for (const char* impl : {"bus", "raw"})
      for (const std::string& fail_every : {every, std::string("0")})
        runs[std::string(impl) + "/" + fail_every].push_back(run.run(
            "retry_path", std::vector<std::string>{"--impl", impl, "--fail-every", fail_every} + args));
  return runs;
}

// Every message fails once and is redelivered 1 s later (issue 23), against
// all succeeding; both sent without waiting (a window of all messages), so
// each time runs from the first send to the last handled.
const int redelivered_after_ms = 1000;

json redelivered_once(case_runner& run, const suite_options& o, const sizes& s) {
  const auto all = std::to_string(s.retry);
  auto runs = retry_path_rounds(run, o, "1",
                                {"--redeliver-after-ms", std::to_string(redelivered_after_ms),
                                 "--window", all, "--messages", all, "--slots",
                                 std::to_string(s.slots_for_failures)});
  json out = {{"messages", s.retry},
              {"policy", "redeliver({" + std::to_string(redelivered_after_ms) + "ms})"},
              {"slots", s.slots_for_failures}};
  for (const char* impl : {"bus", "raw"}) {
    auto& failing = runs[std::string(impl) + "/1"];
    auto& ok = runs[std::string(impl) + "/0"];
    out[impl] = {{"all_success_s", median(ok, "seconds")},
                 {"all_redelivered_s", median(failing, "seconds")},
                 {"peak_rss_kb", median(failing, "peak_rss_kb")}};
    out[impl]["cost_ratio"] = ratio(out[impl]["all_redelivered_s"], out[impl]["all_success_s"]);
    out[impl]["runs"] = {{"failing", failing}, {"all_success", ok}};
  }
  return out;
}

json failure_section(case_runner& run, const suite_options& o, const sizes& s) {
  auto runs = retry_path_rounds(run, o, "10",
                                {"--messages", std::to_string(s.retry), "--slots",
                                 std::to_string(s.slots_for_failures)});
  json out = {{"messages", s.retry},
              {"fail_every", 10},
              {"policy", "retry(1, 0ms)"},
              {"slots", s.slots_for_failures}};
  for (const char* impl : {"bus", "raw"}) {
    auto& failing = runs[std::string(impl) + "/10"];
    auto& ok = runs[std::string(impl) + "/0"];
    out[impl] = {{"all_success_s", median(ok, "seconds")},
                 {"ten_percent_failing_s", median(failing, "seconds")},
                 {"all_success_msgs_per_s", median(ok, "msgs_per_s")},
                 {"ten_percent_failing_msgs_per_s", median(failing, "msgs_per_s")},
                 {"peak_rss_kb", median(failing, "peak_rss_kb")}};
    out[impl]["cost_ratio"] = ratio(out[impl]["ten_percent_failing_s"], out[impl]["all_success_s"]);
    out[impl]["runs"] = {{"failing", failing}, {"all_success", ok}};
  }
  out["ratio_bus_to_raw_failing"] = ratio(out["bus"]["ten_percent_failing_msgs_per_s"],
                                          out["raw"]["ten_percent_failing_msgs_per_s"]);
  out["redelivered_once"] = redelivered_once(run, o, s);
  return out;
}

json redelivery_section(case_runner& run, const suite_options& o, const sizes& s) {
  json out = {{"messages", s.redelivery}, {"slots", s.slots_for_failures}};
  auto common = std::vector<std::string>{"--messages", std::to_string(s.redelivery), "--slots",
                                         std::to_string(s.slots_for_failures)};
  for (const char* impl : {"bus", "raw"}) {
    std::vector<json> memory_runs, time_runs;
    // Every redelivery is due at one instant, once scheduling is over: 1.5x
    // the slowest schedule seen so far (the memory run just before, on one
    // malloc arena, is the slower kind), and half a second.
    double slowest = 0;
    for (int r = 0; r < o.runs; ++r) {
      memory_runs.push_back(run.run(
          "redelivery", common + std::vector<std::string>{"--impl", impl, "--measure", "memory"}));
      slowest = std::max(slowest, num(memory_runs.back()["schedule_s_single_arena"], 30));
      auto due_ms = static_cast<int>(1500 * slowest) + 500;
      auto timed = run.run("redelivery", common
                                             + std::vector<std::string>{"--impl", impl, "--measure",
                                                                        "time", "--due-after-ms",
                                                                        std::to_string(due_ms)});
      slowest = std::max(slowest, num(timed["schedule_s"]));
      time_runs.push_back(timed);
    }
    json side;
    for (const char* key : {"bytes_per_pending", "envelope_bytes", "bytes_beyond_envelope"})
      side[key] = median(memory_runs, key);
    for (const char* key : {"schedule_s", "fire_msgs_per_s", "first_fire_lag_ms",
                            "redelivered_handled_msgs_per_s", "peak_rss_kb"})
      side[key] = median(time_runs, key);
    side["runs"] = {{"memory", memory_runs}, {"time", time_runs}};
    out[impl] = side;
  }
  out["ratio_bytes_beyond_bus_to_raw"] =
      ratio(out["bus"]["bytes_beyond_envelope"], out["raw"]["bytes_beyond_envelope"]);
  return out;
}

// Handlers blocking blocking_ms on 2 CAF threads, default handler_threads,
// against the ideal (slots / block time) and raw CAF with detached workers.
json blocking_section(case_runner& run, const suite_options& o, const sizes& s) {
  json rows = json::array();
  for (int slots : blocking_slots) {
    auto messages = static_cast<std::uint64_t>(s.blocking_rounds) * static_cast<std::uint64_t>(slots);
    auto args = std::vector<std::string>{"--slots", std::to_string(slots), "--block-ms",
                                         std::to_string(blocking_ms), "--messages",
                                         std::to_string(messages)};
    std::vector<json> bus_runs, raw_runs;
    for (int r = 0; r < o.runs; ++r) {
      bus_runs.push_back(run.run("blocking", args + std::vector<std::string>{"--impl", "bus"}));
      raw_runs.push_back(run.run("blocking", args + std::vector<std::string>{"--impl", "raw"}));
    }
    auto row = bus_against_raw(std::move(bus_runs), std::move(raw_runs));
    row["slots"] = slots;
    row["block_ms"] = blocking_ms;
    row["messages"] = messages;
    row["ideal_msgs_per_s"] = slots * 1000.0 / blocking_ms;
    row["bus_ratio_to_ideal"] = ratio(row["bus_msgs_per_s"], row["ideal_msgs_per_s"]);
    row["raw_ratio_to_ideal"] = ratio(row["raw_msgs_per_s"], row["ideal_msgs_per_s"]);
    rows.push_back(row);
  }
  return rows;
}

// A user's actor answering request/response while every slot of an
// endpoint blocks (busy), against the same with the bus idle; interleaved.
json round_trip_section(case_runner& run, const suite_options& o, const sizes& s) {
  auto args = std::vector<std::string>{"--slots",    std::to_string(round_trip_slots),
                                       "--block-ms", std::to_string(blocking_ms),
                                       "--requests", std::to_string(s.round_trip_requests)};
  std::vector<json> busy, idle;
  for (int r = 0; r < o.runs; ++r) {
    busy.push_back(run.run("blocked_round_trip", args + std::vector<std::string>{"--impl", "busy"}));
    idle.push_back(run.run("blocked_round_trip", args + std::vector<std::string>{"--impl", "idle"}));
  }
  json out = {{"slots", round_trip_slots},
              {"block_ms", blocking_ms},
              {"requests", s.round_trip_requests}};
  for (auto [side, runs] : {std::pair{"busy", &busy}, std::pair{"idle", &idle}})
    out[side] = {{"p50_us", median(*runs, "p50_us")},
                 {"p99_us", median(*runs, "p99_us")},
                 {"max_us", median(*runs, "max_us")},
                 {"endpoint_msgs_per_s", median(*runs, "endpoint_msgs_per_s")},
                 {"runs", *runs}};
  out["ratio_p99_busy_to_idle"] = ratio(out["busy"]["p99_us"], out["idle"]["p99_us"]);
  return out;
}

// Which schedulers the bus runs on in a RabbitMQ row: CAF's default
// (work-stealing) only, or that and the sharing one, which the README
// advises for handlers that wait on a broker.
enum class schedulers { stealing, both };

// Bus and raw rabbitmq-c interleaved, run by run, so that the broker's
// state (its disk, its memory) drifts under both alike. With
// schedulers::both the bus runs a third time per round, on CAF's sharing
// scheduler, whose idle workers wait on a condition variable where the
// default's poll: on two cores that polling takes CPU the broker needs.
json rabbitmq_rows(case_runner& run, const suite_options& o, const sizes& s,
                   const std::string& name, const char* knob, const std::vector<int>& values,
                   const std::vector<std::string>& extra = {},
                   schedulers on = schedulers::stealing) {
  json rows = json::array();
  for (int v : values) {
    auto messages = v == 1 ? s.rabbitmq_one : s.rabbitmq_many;
    auto args = std::vector<std::string>{"--url", o.rabbitmq_url, std::string("--") + knob,
                                         std::to_string(v), "--messages", std::to_string(messages)}
                + extra;
    std::vector<json> bus_runs, sharing_runs, raw_runs;
    for (int r = 0; r < o.runs; ++r) {
      bus_runs.push_back(run.run(name, args + std::vector<std::string>{"--impl", "bus"}));
      if (on == schedulers::both)
        sharing_runs.push_back(run.run(
          name, args + std::vector<std::string>{"--impl", "bus", "--policy", "sharing"}));
      raw_runs.push_back(run.run(name, args + std::vector<std::string>{"--impl", "raw"}));
    }
    auto row = bus_against_raw(std::move(bus_runs), raw_runs);
    if (on == schedulers::both) {
      auto sharing = bus_against_raw(std::move(sharing_runs), std::move(raw_runs));
      row["sharing"] = {{"bus_msgs_per_s", sharing["bus_msgs_per_s"]},
                        {"bus_peak_rss_kb", sharing["bus_peak_rss_kb"]},
                        {"ratio_bus_to_raw", sharing["ratio_bus_to_raw"]},
                        {"runs", sharing["runs"]["bus"]}};
    }
    row[knob] = v;
    row["messages"] = messages;
    rows.push_back(row);
  }
  return rows;
}

// One thread, rabbitmq_async_window sends in flight, bus and raw interleaved.
json rabbitmq_async_row(case_runner& run, const suite_options& o, const sizes& s,
                        const std::vector<std::string>& extra = {}) {
  auto messages = 2 * s.rabbitmq_many;
  auto args = std::vector<std::string>{"--url", o.rabbitmq_url, "--window",
                                       std::to_string(rabbitmq_async_window), "--messages",
                                       std::to_string(messages)}
              + extra;
  std::vector<json> bus_runs, raw_runs;
  for (int r = 0; r < o.runs; ++r) {
    bus_runs.push_back(run.run("rabbitmq_async_send", args + std::vector<std::string>{"--impl", "bus"}));
    raw_runs.push_back(run.run("rabbitmq_async_send", args + std::vector<std::string>{"--impl", "raw"}));
  }
  auto row = bus_against_raw(std::move(bus_runs), std::move(raw_runs));
  row["window"] = rabbitmq_async_window;
  row["messages"] = messages;
  return row;
}

// Raw rabbitmq-c at its limit: a large prefetch and multiple acks. Every
// consume row is shown against it too (ratio_bus_to_limit).
json rabbitmq_limit(case_runner& run, const suite_options& o, const sizes& s, json& consume) {
  std::vector<json> runs;
  for (int r = 0; r < o.runs; ++r)
    runs.push_back(run.run("rabbitmq_consume",
                           {"--url", o.rabbitmq_url, "--impl", "raw", "--slots",
                            std::to_string(rabbitmq_limit_prefetch), "--ack-every",
                            std::to_string(rabbitmq_limit_ack_every), "--messages",
                            std::to_string(s.rabbitmq_many)}));
  json limit = {{"prefetch", rabbitmq_limit_prefetch},
                {"ack_every", rabbitmq_limit_ack_every},
                {"messages", s.rabbitmq_many},
                {"raw_msgs_per_s", median(runs, "msgs_per_s")},
                {"raw_peak_rss_kb", median(runs, "peak_rss_kb")},
                {"runs", runs}};
  for (auto& row : consume) {
    row["ratio_bus_to_limit"] = ratio(row["bus_msgs_per_s"], limit["raw_msgs_per_s"]);
    if (row.contains("sharing"))
      row["sharing"]["ratio_bus_to_limit"] =
        ratio(row["sharing"]["bus_msgs_per_s"], limit["raw_msgs_per_s"]);
  }
  return limit;
}

json rabbitmq_section(case_runner& run, const suite_options& o, const sizes& s) {
  if (o.rabbitmq_url.empty())
    return {{"status", o.rabbitmq_status},
            {"send", nullptr},
            {"async_send", nullptr},
            {"consume", nullptr},
            {"consume_limit", nullptr}};
  auto consume =
    rabbitmq_rows(run, o, s, "rabbitmq_consume", "slots", rabbitmq_slots, {}, schedulers::both);
  auto limit = rabbitmq_limit(run, o, s, consume);
  return {{"status", "a throwaway broker on this machine (scripts/rabbitmq-test-broker.sh); "
                     "persistent messages, publisher confirms, a durable classic queue, one "
                     "basic.ack per message on the raw side (the bus coalesces acks of "
                     "messages already handled), except the raw limit row"},
          {"send", rabbitmq_rows(run, o, s, "rabbitmq_send", "senders", rabbitmq_senders)},
          {"async_send", rabbitmq_async_row(run, o, s)},
          {"consume", consume},
          {"consume_limit", limit}};
}

// Quorum queues on a throwaway three-node cluster (issue 15), bus and raw
// interleaved as above, both on the cluster's first node.
json rabbitmq_cluster_section(case_runner& run, const suite_options& o, const sizes& s,
                              const std::string& url, const std::string& status) {
  if (url.empty())
    return {{"status", status}, {"send", nullptr}, {"async_send", nullptr}, {"consume", nullptr}};
  auto on_cluster = o;
  on_cluster.rabbitmq_url = url;
  const std::vector<std::string> quorum{"--queue-type", "quorum"};
  return {{"status", "a throwaway three-node cluster on this machine "
                     "(scripts/rabbitmq-test-broker.sh cluster-start), both sides on node 1; "
                     "quorum queues with the bus's arguments, declared by its transport for "
                     "both sides; persistent messages, publisher confirms, one basic.ack per "
                     "message on the raw side"},
          {"send", rabbitmq_rows(run, on_cluster, s, "rabbitmq_send", "senders",
                                 rabbitmq_cluster_senders, quorum)},
          {"async_send", rabbitmq_async_row(run, on_cluster, s, quorum)},
          {"consume", rabbitmq_rows(run, on_cluster, s, "rabbitmq_consume", "slots",
                                    rabbitmq_cluster_slots, quorum)}};
}

// -- targets ------------------------------------------------------------------

json target(const std::string& what, const std::string& goal, const std::string& measured,
            bool met) {
  return {{"target", what}, {"goal", goal}, {"measured", measured}, {"met", met}};
}

json evaluate_targets(const json& results) {
  json out = json::array();
  if (results.contains("blocking")) {
    for (const auto& row : results["blocking"]) {
      auto slots = row["slots"].get<int>();
      out.push_back(target("blocking 10 ms handlers, " + std::to_string(slots)
                               + " slots, 2 CAF threads, vs ideal "
                               + fmt("%.0f", num(row["ideal_msgs_per_s"])) + "/s",
                           ">= 0.9",
                           fmt("%.2f", num(row["bus_ratio_to_ideal"])) + " ("
                               + fmt("%.0f msg/s", num(row["bus_msgs_per_s"])) + ")",
                           num(row["bus_ratio_to_ideal"]) >= 0.9));
    }
  }
  if (results.contains("round_trip")) {
    const auto& rt = results["round_trip"];
    out.push_back(target("actor request/response p99 while 64 slots block", "< 5 ms",
                         fmt("%.0f us", num(rt["busy"]["p99_us"], 1e9)) + " (idle "
                             + fmt("%.0f us", num(rt["idle"]["p99_us"], 1e9)) + ")",
                         num(rt["busy"]["p99_us"], 1e9) < 5000));
  }
  if (results.contains("in_memory")) {
    for (const auto& row : results["in_memory"]["throughput"])
      if (row.contains("dedicated"))
        out.push_back(target("no-op, " + std::to_string(row["slots"].get<int>())
                                 + " slots, default threads (dedicated) vs caf_workers",
                             ">= 0.5", fmt("%.2f", num(row["dedicated"]["ratio_to_caf_workers"])),
                             num(row["dedicated"]["ratio_to_caf_workers"]) >= 0.5));
  }
  if (results.contains("in_memory") && results["in_memory"].contains("resilience_cost"))
    for (const auto& row : results["in_memory"]["resilience_cost"]["rows"])
      if (row["variant"] != "none")
        out.push_back(target("success path with " + row["variant"].get<std::string>()
                                 + " configured vs none (issue 14)",
                             ">= 0.98", fmt("%.3f", num(row["ratio_to_none"])),
                             num(row["ratio_to_none"]) >= 0.98));
  if (results.contains("in_memory") && results["in_memory"].contains("metrics")) {
    const auto& m = results["in_memory"]["metrics"];
    out.push_back(target("no-op throughput, metrics on vs off (" + std::to_string(m["slots"].get<int>())
                             + " slots)",
                         ">= 0.95", fmt("%.3f", num(m["ratio_on_to_off"])),
                         num(m["ratio_on_to_off"]) >= 0.95));
  }
  if (results.contains("in_memory") && results["in_memory"].contains("page")) {
    const auto& p = results["in_memory"]["page"];
    out.push_back(target("no-op throughput, the bus's page open and polling vs closed (issue 24)",
                         ">= 0.98", fmt("%.3f", num(p["ratio_open_to_closed"])),
                         num(p["ratio_open_to_closed"]) >= 0.98));
  }
  if (results.contains("failure_path")) { // absent with --only rabbitmq|blocking
    const auto& tp = results["in_memory"]["throughput"];
    double worst_ratio = 1e9, best = 0;
    int best_slots = 0;
    std::string ratios;
    for (const auto& row : tp) {
      worst_ratio = std::min(worst_ratio, num(row["ratio_bus_to_raw"]));
      ratios += (ratios.empty() ? "" : ", ") + std::to_string(row["slots"].get<int>()) + " slots "
                + fmt("%.2f", num(row["ratio_bus_to_raw"]));
      if (num(row["bus_msgs_per_s"]) > best) {
        best = num(row["bus_msgs_per_s"]);
        best_slots = row["slots"].get<int>();
      }
    }
    out.push_back(
        target("in-memory bus vs raw CAF doing the same work", ">= 0.5", ratios, worst_ratio >= 0.5));
    out.push_back(
        target("no-op handler throughput on 2 cores", ">= 500k msg/s",
               fmt("%.0f msg/s", best) + " (best, " + std::to_string(best_slots) + " slots)",
               best >= 500'000));
    double worst_p99 = 0;
    std::string p99s;
    for (const auto& row : results["in_memory"]["latency"]) {
      worst_p99 = std::max(worst_p99, num(row["bus"]["p99_us"], 1e9));
      p99s += (p99s.empty() ? "" : ", ") + std::to_string(row["slots"].get<int>()) + " slots "
              + fmt("%.0f us", num(row["bus"]["p99_us"]));
    }
    out.push_back(
        target("p99 send-to-handled at half of peak load", "< 1 ms", p99s, worst_p99 < 1000));
    const auto& f = results["failure_path"]["bus"];
    out.push_back(target("10% failing once (retry(1, 0ms)) vs all success", "<= 1.5x",
                         fmt("%.2fx", num(f["cost_ratio"])), num(f["cost_ratio"], 1e9) <= 1.5));
    const auto& once = results["failure_path"]["redelivered_once"]["bus"];
    out.push_back(target("all failing once, redelivered 1 s later, vs all success (first send "
                         "to last handled)",
                         "<= 3x", fmt("%.2fx", num(once["cost_ratio"])),
                         num(once["cost_ratio"], 1e9) <= 3));
    const auto& r = results["redelivery"]["bus"];
    auto pending = k(results["redelivery"]["messages"]);
    out.push_back(target("memory per pending redelivery beyond the envelope", "<= 150 B",
                         fmt("%.0f B", num(r["bytes_beyond_envelope"])),
                         num(r["bytes_beyond_envelope"], 1e9) <= 150));
    // Issue 23: scheduling a redelivery costs at most 1.5x handling a
    // message that succeeds, on the same bus in the same run (delivery is
    // the floor of both), per message, as the two runs may differ in size.
    // A figure missing on either side leaves the ratio infinite or NaN: missed.
    auto per_success = num(f["all_success_s"]) / num(results["failure_path"]["messages"], 1);
    auto per_schedule = num(r["schedule_s"], 1e9) / num(results["redelivery"]["messages"], 1);
    auto schedule_ratio = per_schedule / per_success;
    out.push_back(target("time to schedule " + pending + " redeliveries vs handling as many "
                         "that succeed",
                         "<= 1.5x",
                         fmt("%.2f s, ", num(r["schedule_s"])) + fmt("%.2fx", schedule_ratio),
                         schedule_ratio <= 1.5));
    out.push_back(target(pending + " redeliveries firing when due", ">= 1M msg/s",
                         fmt("%.0f msg/s", num(r["fire_msgs_per_s"])),
                         num(r["fire_msgs_per_s"]) >= 1e6));
  }
  const auto& mq = results["rabbitmq"];
  if (mq["send"].is_array()) {
    double worst = 1e9;
    std::string ratios;
    for (const char* path : {"send", "consume"})
      for (const auto& row : mq[path]) {
        worst = std::min(worst, num(row["ratio_bus_to_raw"]));
        ratios += (ratios.empty() ? "" : ", ") + std::string(path) + " "
                  + std::to_string(row.contains("senders") ? row["senders"].get<int>()
                                                           : row["slots"].get<int>())
                  + " " + fmt("%.2f", num(row["ratio_bus_to_raw"]));
      }
    out.push_back(target("RabbitMQ bus vs raw rabbitmq-c, same guarantees", ">= 0.9", ratios,
                         worst >= 0.9));
    // The same consume rows with the scheduler the README advises for a
    // process whose handlers wait on a broker.
    double worst_sharing = 1e9;
    std::string sharing;
    for (const auto& row : mq["consume"])
      if (row.contains("sharing")) {
        worst_sharing = std::min(worst_sharing, num(row["sharing"]["ratio_bus_to_raw"]));
        sharing += (sharing.empty() ? "" : ", ") + std::string("consume ")
                   + std::to_string(row["slots"].get<int>()) + " "
                   + fmt("%.2f", num(row["sharing"]["ratio_bus_to_raw"]));
      }
    if (!sharing.empty())
      out.push_back(target("RabbitMQ consume, CAF sharing scheduler, vs raw rabbitmq-c", ">= 0.9",
                           sharing, worst_sharing >= 0.9));
  }
  if (mq.contains("async_send") && mq["async_send"].is_object()) {
    const auto& row = mq["async_send"];
    out.push_back(target("RabbitMQ async send, 1 thread, 1,000 in flight vs raw window 1,000",
                         ">= 0.9", fmt("%.2f", num(row["ratio_bus_to_raw"])),
                         num(row["ratio_bus_to_raw"]) >= 0.9));
  }
  if (results.contains("adaptive"))
    for (const auto& t : adaptive_targets(results["adaptive"]))
      out.push_back(t);
  if (results.contains("outbox"))
    for (const auto& t : outbox_targets(results["outbox"]))
      out.push_back(t);
  return out;
}

outbox_suite_options outbox_options(const suite_options& o) {
  outbox_suite_options oo;
  oo.runs = o.runs;
  oo.quick = o.quick;
  oo.postgres_conninfo = o.postgres_conninfo;
  oo.postgres_status = "not measured (./bus.sh bench starts a server for it)";
  return oo;
}

run_case_fn case_fn(case_runner& run) {
  return [&run](const std::string& name, const std::vector<std::string>& args) {
    return run.run(name, args);
  };
}

// The outbox section, with the PostgreSQL server it needs: the one given,
// or a throwaway one up only while the section runs.
json outbox_with_server(case_runner& run, const suite_options& o) {
  auto oo = outbox_options(o);
  auto run_case = case_fn(run);
  if (!oo.postgres_conninfo.empty() || o.postgres_server_script.empty()
      || o.postgres_server_dir.empty())
    return outbox_section(run_case, oo);
  auto log = (std::filesystem::path(o.json_path).parent_path() / "postgres.log").string();
  throwaway_postgres server(o.postgres_server_script, o.postgres_server_dir, log);
  oo.postgres_conninfo = server.conninfo();
  if (oo.postgres_conninfo.empty())
    oo.postgres_status = "not measured: the throwaway server did not start (" + log + ")";
  return outbox_section(run_case, oo);
}

// -- the table ----------------------------------------------------------------

// The send, consume and async send rows of a RabbitMQ section.
void print_bus_raw_rows(const json& mq) {
  std::printf("  %-26s %10s %12s %12s %8s %10s\n", "", "messages", "bus msg/s", "raw msg/s",
              "bus/raw", "RSS b/r");
  for (const char* path : {"send", "consume"})
    for (const auto& row : mq[path]) {
      auto label = std::string(path) == "send"
                       ? "send, " + std::to_string(row["senders"].get<int>())
                             + (row["senders"].get<int>() == 1 ? " sender" : " senders")
                       : "consume, prefetch " + std::to_string(row["slots"].get<int>());
      std::printf("  %-26s %10s %12s %12s %8s %10s\n", label.c_str(),
                  k(row["messages"]).c_str(), fmt("%.1fk", num(row["bus_msgs_per_s"]) / 1000).c_str(),
                  fmt("%.1fk", num(row["raw_msgs_per_s"]) / 1000).c_str(),
                  x(row["ratio_bus_to_raw"]).c_str(),
                  (mb(row["bus_peak_rss_kb"]) + "/" + mb(row["raw_peak_rss_kb"])).c_str());
      if (row.contains("sharing")) {
        const auto& shr = row["sharing"];
        std::printf("  %-26s %10s %12s %12s %8s %10s\n", "  CAF sharing scheduler",
                    k(row["messages"]).c_str(),
                    fmt("%.1fk", num(shr["bus_msgs_per_s"]) / 1000).c_str(),
                    fmt("%.1fk", num(row["raw_msgs_per_s"]) / 1000).c_str(),
                    x(shr["ratio_bus_to_raw"]).c_str(),
                    (mb(shr["bus_peak_rss_kb"]) + "/" + mb(row["raw_peak_rss_kb"])).c_str());
      }
    }
  if (mq.contains("async_send") && mq["async_send"].is_object()) {
    const auto& row = mq["async_send"];
    auto label = "async send, " + std::to_string(row["window"].get<int>()) + " in flight";
    std::printf("  %-26s %10s %12s %12s %8s %10s\n", label.c_str(), k(row["messages"]).c_str(),
                fmt("%.1fk", num(row["bus_msgs_per_s"]) / 1000).c_str(),
                fmt("%.1fk", num(row["raw_msgs_per_s"]) / 1000).c_str(),
                x(row["ratio_bus_to_raw"]).c_str(),
                (mb(row["bus_peak_rss_kb"]) + "/" + mb(row["raw_peak_rss_kb"])).c_str());
  }
}

void print_table(const json& results, const suite_options& o) {
  const auto& m = results["machine"];
  std::printf("\nbus-bench: %u cores (%s), %s memory, CAF %d with %d worker threads; median of %d "
              "runs%s; load average %s at start\n",
              m["nproc"].get<unsigned>(), m["cpu"].get<std::string>().c_str(),
              m["memory"].get<std::string>().c_str(), m["caf_version"].get<int>(), o.threads,
              o.runs, o.quick ? " (--quick: small sizes, not figures to quote)" : "",
              m["load_average_at_start"].get<std::string>().c_str());

  if (results.contains("in_memory")) { // absent with --only rabbitmq
    std::printf("\nIn-memory throughput, no-op handler (%s messages; peak RSS in MiB)\n",
                k(results["in_memory"]["throughput"][0]["messages"]).c_str());
    std::printf("  %-6s %12s %12s %8s %12s %9s %10s\n", "slots", "bus msg/s", "raw msg/s", "bus/raw",
                "peer msg/s", "bus/peer", "RSS b/r");
    for (const auto& row : results["in_memory"]["throughput"])
      std::printf(
          "  %-6d %12s %12s %8s %12s %9s %10s\n", row["slots"].get<int>(),
          k(row["bus_msgs_per_s"]).c_str(), k(row["raw_msgs_per_s"]).c_str(),
          x(row["ratio_bus_to_raw"]).c_str(),
          row.contains("peer_msgs_per_s") ? fmt("%.1fk", num(row["peer_msgs_per_s"]) / 1000).c_str()
                                          : "-",
          row.contains("ratio_bus_to_peer") ? fmt("%.0f", num(row["ratio_bus_to_peer"])).c_str()
                                            : "-",
          (mb(row["bus_peak_rss_kb"]) + "/" + mb(row["raw_peak_rss_kb"])).c_str());
    for (const auto& row : results["in_memory"]["throughput"])
      if (row.contains("dedicated"))
        std::printf("  %-6s %12s %12s %8s %12s %9s %10s   <- %d slots, default handler_threads "
                    "(dedicated): %s of caf_workers\n",
                    (std::to_string(row["slots"].get<int>()) + "d").c_str(),
                    k(row["dedicated"]["bus_msgs_per_s"]).c_str(), k(row["raw_msgs_per_s"]).c_str(),
                    x(row["dedicated"]["ratio_bus_to_raw"]).c_str(), "-", "-",
                    (mb(row["dedicated"]["bus_peak_rss_kb"]) + "/" + mb(row["raw_peak_rss_kb"])).c_str(),
                    row["slots"].get<int>(), x(row["dedicated"]["ratio_to_caf_workers"]).c_str());
    if (results["in_memory"].contains("metrics")) {
      const auto& m = results["in_memory"]["metrics"];
      std::printf("  %-6s %12s %12s %8s   <- %d slots, metrics on vs off (same run)\n",
                  (std::to_string(m["slots"].get<int>()) + "m").c_str(), k(m["on_msgs_per_s"]).c_str(),
                  k(m["off_msgs_per_s"]).c_str(), x(m["ratio_on_to_off"]).c_str(),
                  m["slots"].get<int>());
    }
    if (results["in_memory"].contains("page")) {
      const auto& pg = results["in_memory"]["page"];
      std::printf("  %-6s %12s %12s %8s   <- %d slots, the page open (polling, %s polls a run) "
                  "vs closed (same run)\n",
                  (std::to_string(pg["slots"].get<int>()) + "p").c_str(),
                  k(pg["open_msgs_per_s"]).c_str(), k(pg["closed_msgs_per_s"]).c_str(),
                  x(pg["ratio_open_to_closed"]).c_str(), pg["slots"].get<int>(),
                  fmt("%.0f", num(pg["polls_per_run"])).c_str());
    }
    std::printf("  bus rows: handler_threads(caf_workers), the no-op handler's documented choice\n");
    std::printf("  peer: %s\n", results["peer"]["status"].get<std::string>().c_str());
  }
  if (results.contains("in_memory") && results["in_memory"].contains("resilience_cost")) {
    const auto& rc = results["in_memory"]["resilience_cost"];
    std::printf("\nSuccess path with resilience configured (%s messages, %d slots, no-op handler)\n",
                k(rc["messages"]).c_str(), rc["slots"].get<int>());
    std::printf("  %-24s %12s %9s\n", "configured", "bus msg/s", "vs none");
    for (const auto& row : rc["rows"])
      std::printf("  %-24s %12s %9s\n", row["variant"].get<std::string>().c_str(),
                  k(row["msgs_per_s"]).c_str(), x(row["ratio_to_none"]).c_str());
  }
  if (results.contains("failure_path")) { // absent with --only rabbitmq|blocking
    std::printf("\nLatency, send to handled, at half of the bus's peak (us; bus: caf_workers)\n");
    std::printf("  %-6s %10s %18s %18s %12s\n", "slots", "msg/s", "bus p50/p99/p999",
                "raw p50/p99/p999", "p99 bus/raw");
    for (const auto& row : results["in_memory"]["latency"])
      std::printf("  %-6d %10s %18s %18s %12s\n", row["slots"].get<int>(),
                  k(row["offered_msgs_per_s"]).c_str(),
                  (us(row["bus"]["p50_us"]) + "/" + us(row["bus"]["p99_us"]) + "/"
                   + us(row["bus"]["p999_us"]))
                      .c_str(),
                  (us(row["raw"]["p50_us"]) + "/" + us(row["raw"]["p99_us"]) + "/"
                   + us(row["raw"]["p999_us"]))
                      .c_str(),
                  x(row["ratio_p99_bus_to_raw"]).c_str());

    const auto& f = results["failure_path"];
    std::printf("\nFailure path: %s messages, every 10th fails once, retry(1, 0ms), %d slots (s)\n",
                k(f["messages"]).c_str(), f["slots"].get<int>());
    std::printf("  %-6s %12s %12s %8s\n", "", "all success", "10% failing", "cost");
    for (const char* side : {"bus", "raw"})
      std::printf("  %-6s %12s %12s %7sx\n", side, x(f[side]["all_success_s"]).c_str(),
                  x(f[side]["ten_percent_failing_s"]).c_str(), x(f[side]["cost_ratio"]).c_str());
    const auto& once = f["redelivered_once"];
    std::printf("\nEvery message fails once, %s, %s messages sent at once, %d slots (s)\n",
                once["policy"].get<std::string>().c_str(), k(once["messages"]).c_str(),
                once["slots"].get<int>());
    std::printf("  %-6s %12s %12s %8s\n", "", "all success", "redelivered", "cost");
    for (const char* side : {"bus", "raw"})
      std::printf("  %-6s %12s %12s %7sx\n", side, x(once[side]["all_success_s"]).c_str(),
                  x(once[side]["all_redelivered_s"]).c_str(), x(once[side]["cost_ratio"]).c_str());

    const auto& r = results["redelivery"];
    std::printf("\nRedeliveries pending: %s messages, all due at one instant\n",
                k(r["messages"]).c_str());
    std::printf("  %-6s %12s %12s %10s %12s %12s %10s\n", "", "B/pending", "B beyond", "envelope",
                "schedule s", "fire msg/s", "peak MiB");
    for (const char* side : {"bus", "raw"})
      std::printf("  %-6s %12s %12s %10s %12s %12s %10s\n", side,
                  us(r[side]["bytes_per_pending"]).c_str(),
                  us(r[side]["bytes_beyond_envelope"]).c_str(), us(r[side]["envelope_bytes"]).c_str(),
                  x(r[side]["schedule_s"]).c_str(), k(r[side]["fire_msgs_per_s"]).c_str(),
                  mb(r[side]["peak_rss_kb"]).c_str());
  }
  if (results.contains("blocking")) {
    std::printf("\nBlocking handlers (sleep %d ms), %d CAF threads, default handler_threads "
                "(dedicated); raw: detached CAF workers\n",
                blocking_ms, o.threads);
    std::printf("  %-6s %8s %10s %10s %10s %10s %10s\n", "slots", "ideal/s", "bus msg/s",
                "bus/ideal", "raw msg/s", "raw/ideal", "bus/raw");
    for (const auto& row : results["blocking"])
      std::printf("  %-6d %8s %10s %10s %10s %10s %10s\n", row["slots"].get<int>(),
                  us(row["ideal_msgs_per_s"]).c_str(), us(row["bus_msgs_per_s"]).c_str(),
                  x(row["bus_ratio_to_ideal"]).c_str(), us(row["raw_msgs_per_s"]).c_str(),
                  x(row["raw_ratio_to_ideal"]).c_str(), x(row["ratio_bus_to_raw"]).c_str());
  }
  if (results.contains("round_trip")) {
    const auto& rt = results["round_trip"];
    std::printf("\nRequest/response to a user's actor on CAF's workers, %s requests 1 ms apart "
                "(us)\n",
                us(rt["requests"]).c_str());
    std::printf("  %-44s %8s %8s %8s %12s\n", "", "p50", "p99", "max", "endpoint/s");
    for (const char* side : {"busy", "idle"})
      std::printf("  %-44s %8s %8s %8s %12s\n",
                  std::string(side) == "busy" ? "busy: 64 slots all blocked in 10 ms handlers"
                                              : "idle: the same bus, no messages",
                  us(rt[side]["p50_us"]).c_str(), us(rt[side]["p99_us"]).c_str(),
                  us(rt[side]["max_us"]).c_str(), us(rt[side]["endpoint_msgs_per_s"]).c_str());
  }
  if (results.contains("outbox"))
    print_outbox_table(results["outbox"]);
  if (results.contains("adaptive"))
    print_adaptive_table(results["adaptive"]);
  const auto& mq = results["rabbitmq"];
  std::printf("\nRabbitMQ: %s\n", mq["status"].get<std::string>().c_str());
  if (mq["send"].is_array()) {
    print_bus_raw_rows(mq);
    if (mq.contains("consume_limit") && mq["consume_limit"].is_object()) {
      const auto& limit = mq["consume_limit"];
      std::printf("  raw consume limit (prefetch %d, multiple ack per %d): %s msg/s; bus consume "
                  "against it:",
                  limit["prefetch"].get<int>(), limit["ack_every"].get<int>(),
                  fmt("%.1fk", num(limit["raw_msgs_per_s"]) / 1000).c_str());
      for (const auto& row : mq["consume"])
        std::printf(" prefetch %d %s%s;", row["slots"].get<int>(),
                    x(row["ratio_bus_to_limit"]).c_str(),
                    row.contains("sharing")
                        ? (" (sharing " + x(row["sharing"]["ratio_bus_to_limit"]) + ")").c_str()
                        : "");
      std::printf("\n");
    }
    std::printf("  send: concurrent bus.send() calls vs one raw publisher with as many "
                "unconfirmed; async send: one thread, bus.send_async with a window vs "
                "raw with that window of confirms; consume: an endpoint with a no-op handler vs "
                "raw consume+decode\n");
  }

  if (results.contains("rabbitmq_cluster")) {
    const auto& qq = results["rabbitmq_cluster"];
    std::printf("\nRabbitMQ, quorum queues on a three-node cluster: %s\n",
                qq["status"].get<std::string>().c_str());
    if (qq["send"].is_array())
      print_bus_raw_rows(qq);
  }

  std::printf("\nTargets (goals, not assertions)\n");
  for (const auto& t : results["targets"])
    std::printf("  %-6s %-52s %-14s %s\n", t["met"].get<bool>() ? "met" : "MISSED",
                t["target"].get<std::string>().c_str(), t["goal"].get<std::string>().c_str(),
                t["measured"].get<std::string>().c_str());
}

} // namespace

int run_suite(const suite_options& o) {
  auto s = sizes_for(o);
  case_runner run(o);
  json results;
  results["machine"] = machine(o);
  results["config"] = {{"runs", o.runs}, {"quick", o.quick}, {"window", 1000}};
  results["peer"] = {{"package", o.peer_package},
                     {"status", o.peer_script.empty() ? o.peer_status
                                                      : o.peer_package
                                                            + ": same workload, same "
                                                              "window, concurrency = slots"}};
  std::fprintf(stderr, "bus-bench: running (one dot per run) ");
  if (o.blocking_only) {
    results["in_memory"]["throughput"] = throughput_section(run, o, s);
    results["blocking"] = blocking_section(run, o, s);
    results["round_trip"] = round_trip_section(run, o, s);
    results["adaptive"] = adaptive_section(case_fn(run), o.runs);
  } else if (o.outbox_only) {
    results["outbox"] = outbox_with_server(run, o);
    // Its RabbitMQ row needs a broker of its own here: the RabbitMQ
    // section, which would start one, does not run.
    if (!o.rabbitmq_broker_script.empty() && !o.rabbitmq_broker_dir.empty()) {
      auto log = (std::filesystem::path(o.json_path).parent_path() / "broker.log").string();
      throwaway_broker broker(o.rabbitmq_broker_script, o.rabbitmq_broker_dir, log);
      results["outbox"]["rabbitmq"] =
        broker.url().empty()
          ? json("not measured: the throwaway broker did not start (" + log + ")")
          : outbox_rabbitmq_row(case_fn(run), outbox_options(o), broker.url());
    } else if (!o.rabbitmq_url.empty()) {
      results["outbox"]["rabbitmq"] = outbox_rabbitmq_row(case_fn(run), outbox_options(o), o.rabbitmq_url);
    }
  } else if (!o.rabbitmq_only) {
    results["in_memory"]["throughput"] = throughput_section(run, o, s);
    results["in_memory"]["metrics"] = metrics_section(run, o, s);
    results["in_memory"]["page"] = page_section(run, o, s);
    results["in_memory"]["latency"] =
        latency_section(run, o, s, results["in_memory"]["throughput"]);
    results["failure_path"] = failure_section(run, o, s);
    results["in_memory"]["resilience_cost"] = resilience_section(run, o, s);
    results["redelivery"] = redelivery_section(run, o, s);
    results["blocking"] = blocking_section(run, o, s);
    results["round_trip"] = round_trip_section(run, o, s);
    results["adaptive"] = adaptive_section(case_fn(run), o.runs);
    results["outbox"] = outbox_with_server(run, o);
  }
  if (o.blocking_only || o.outbox_only) {
    results["rabbitmq"] = {{"status", o.blocking_only
                                          ? std::string("not measured (--only blocking)")
                                          : std::string("not measured (--only outbox; the "
                                                        "outbox's own RabbitMQ row is above)")},
                           {"send", nullptr}};
  } else if (o.rabbitmq_broker_script.empty() || o.rabbitmq_broker_dir.empty()) {
    results["rabbitmq"] = rabbitmq_section(run, o, s);
  } else {
    auto log = (std::filesystem::path(o.json_path).parent_path() / "broker.log").string();
    throwaway_broker broker(o.rabbitmq_broker_script, o.rabbitmq_broker_dir, log);
    auto with_broker = o;
    with_broker.rabbitmq_url = broker.url();
    if (broker.url().empty())
      with_broker.rabbitmq_status = "not measured: the throwaway broker did not start (" + log + ")";
    results["rabbitmq"] = rabbitmq_section(run, with_broker, s);
    if (results.contains("outbox") && !broker.url().empty())
      results["outbox"]["rabbitmq"] = outbox_rabbitmq_row(case_fn(run), outbox_options(o), broker.url());
  }
  // The cluster after the single node is gone: they never run together.
  if (!o.blocking_only && !o.outbox_only && !o.rabbitmq_broker_script.empty() && !o.rabbitmq_broker_dir.empty()) {
    auto log = (std::filesystem::path(o.json_path).parent_path() / "cluster.log").string();
    throwaway_broker cluster(o.rabbitmq_broker_script, o.rabbitmq_broker_dir + "-cluster", log,
                             throwaway_broker::shape::cluster);
    results["rabbitmq_cluster"] = rabbitmq_cluster_section(
        run, o, s, cluster.url(),
        "not measured: the throwaway cluster did not start (" + log + ")");
  }
  results["machine"]["load_average_at_end"] = load_average();
  results["targets"] = evaluate_targets(results);
  std::fprintf(stderr, "\n");

  print_table(results, o);
  std::ofstream out(o.json_path);
  out << results.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "bus-bench: cannot write %s\n", o.json_path.c_str());
    return 1;
  }
  std::printf("\nbus-bench: results written to %s\n", o.json_path.c_str());
  return 0;
}

} // namespace bench
