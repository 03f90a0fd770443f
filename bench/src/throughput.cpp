// In-memory throughput and latency of a no-op handler, on the bus or on the
// raw CAF pool (raw_pool.hpp) doing the same work.
//
// Throughput (no --rate): the main thread sends as fast as it can, with at
// most --window messages unfinished (so neither side queues the whole run),
// until every message was handled. Latency (--rate R): the main thread
// sends at R messages/s on a fixed schedule (an open loop: a late sender
// catches up, it never waits for the handlers), and each handler records
// the time from the send call to its own run.
//
// The bus's endpoint runs its no-op handler inline on CAF's workers
// (handler_threads::caf_workers: a handler that never blocks, the
// documented choice); --handler-threads dedicated measures the same
// workload with the default, a thread per slot, and the raw pool with
// detached workers, its raw form.
//
// --resilience A,B (issue 14) configures the bus's success path with
// resilience features that cost something even when nothing fails:
// "retry_budget" (every first attempt deposits in the budget), and the
// features later issues add here (apply_resilience). "none": nothing.
#include <caf/all.hpp>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "measure.hpp"
#include "page_poller.hpp"
#include "producer.hpp"
#include "raw_pool.hpp"
#include "workload.hpp"

namespace bench {

namespace {

// Each comma-separated feature of --resilience, added to the bench bus.
void apply_resilience(bus::bus_builder& b, const std::string& features) {
  std::size_t start = 0;
  while (start <= features.size()) {
    auto end = features.find(',', start);
    auto feature = features.substr(start, end == std::string::npos ? end : end - start);
    if (feature == "retry_budget")
      b.retry_budget(); // Finagle's defaults
    else if (feature == "dependency_breaker") {
      // Hystrix's defaults; the endpoint depends on it through the rule
      // that trips it, as a user's would. The no-op handler never throws,
      // so this is the success path: a check of the breaker per message.
      b.dependency("inventory-db", {});
      b.add_resilience([](bus::policy_builder& p) {
        p.on<std::runtime_error>().trips("inventory-db").retry(1);
      });
    }
    else if (!feature.empty() && feature != "none")
      throw std::runtime_error("--resilience: unknown feature '" + feature + "'");
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
}

} // namespace

case_result run_throughput(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto slots = static_cast<int>(args.number("slots", 8));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 500'000));
  auto window = static_cast<std::uint64_t>(args.number("window", 1'000));
  auto rate = args.real("rate", 0); // 0: as fast as it goes
  auto threads = args.number("threads", 2);
  auto handler_threads = args.text("handler-threads", "caf_workers");
  auto resilience = args.text("resilience", "none");
  // --metrics on: the bus serves metrics (bus_builder::metrics), the cost
  // of which the suite's metrics row measures against the same bus without.
  auto metrics = args.text("metrics", "off") == "on";
  // --page on: and the bus's page is open on it, polling as a browser does
  // (page_poller.hpp); the suite's page row compares it with --metrics on.
  auto page = args.text("page", "off") == "on";
  auto page_speed = static_cast<int>(args.number("page-speed", 1)); // polls x this often
  metrics = metrics || page;
  if (handler_threads != "caf_workers" && handler_threads != "dedicated")
    throw std::runtime_error("--handler-threads is caf_workers or dedicated");

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  completion done;
  std::vector<std::int64_t> latency_ns(rate > 0 ? messages : 0);
  // The no-op handler: what both sides run for each message.
  auto on_message = [&done, &latency_ns](const ping& m) {
    if (!latency_ns.empty())
      latency_ns[m.seq] = now_ns() - m.sent_ns;
    done.complete();
  };

  bench_bus b;
  caf::actor pool;
  std::function<void(ping)> send;
  if (impl == "bus") {
    b = make_bench_bus(sys, slots,
                       handler_threads == "dedicated" ? bus::handler_threads::dedicated
                                                      : bus::handler_threads::caf_workers,
                       [&](const ping& m, bus::handler_context&) { on_message(m); }, {},
                       [&](bus::bus_builder& builder) { apply_resilience(builder, resilience); },
                       metrics);
    if (auto ok = b.bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    send = [&](ping p) { (void)b.bus->send(bench_queue, p); };
  } else {
    auto work = std::make_shared<raw_work>();
    work->handle = [&](const ping& m, int) { on_message(m); };
    pool = spawn_raw_pool(sys, slots, work, handler_threads == "dedicated");
    send = [&](ping p) { caf::anon_send(pool, p); };
  }

  std::unique_ptr<page_poller> poller;
  if (page && b.bus)
    poller = std::make_unique<page_poller>(b.bus->metrics_address(), page_speed);

  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 300));
  auto start = steady::now();
  bool finished = rate > 0 ? send_open_loop(send, done, messages, rate, deadline)
                           : send_closed_loop(send, done, messages, window, deadline);
  auto seconds = seconds_since(start);

  auto polls = poller ? poller->answered() : 0;
  poller.reset();
  if (b.bus)
    b.bus->stop();
  if (pool)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);

  case_result r{{"case", rate > 0 ? "latency" : "throughput"},
                {"impl", impl},
                {"slots", slots},
                {"messages", messages},
                {"threads", threads},
                {"handler_threads", handler_threads},
                {"resilience", impl == "bus" ? resilience : "-"},
                {"metrics", impl == "bus" && metrics},
                {"page_polls", polls},
                {"finished", finished},
                {"seconds", seconds},
                {"msgs_per_s", static_cast<double>(done.done()) / seconds}};
  if (rate > 0 && finished) {
    std::vector<double> us;
    us.reserve(latency_ns.size());
    for (auto ns : latency_ns)
      us.push_back(static_cast<double>(ns) / 1000.0);
    r["offered_msgs_per_s"] = rate;
    r["p50_us"] = quantile(us, 0.50);
    r["p99_us"] = quantile(us, 0.99);
    r["p999_us"] = quantile(us, 0.999);
    r["max_us"] = us.back();
  }
  r["peak_rss_kb"] = peak_rss_kb();
  return r;
}

} // namespace bench
