// The blocking-handler cases: handlers that block (a database call, here
// std::this_thread::sleep_for, which in a benchmark is the workload) on a
// CAF with few worker threads (--threads, 2 in the suite), on the
// endpoint's default handler_threads (dedicated: a thread per slot).
//
// blocking: --messages pings, all sent at once, to an endpoint of --slots
//   whose handler blocks --block-ms; messages/s from the first send to the
//   last handled, and its ratio to the ideal (slots / block time: every
//   slot always blocked). Raw: the raw pool (raw_pool.hpp) with detached
//   workers, the same work written on CAF directly.
// blocked_round_trip: a user's own actor (on CAF's workers) answers
//   requests; the main thread sends it --requests, one every --gap-us, and
//   times each round trip. --impl busy: meanwhile an endpoint of --slots
//   blocking handlers is kept saturated (a feeder thread keeps a backlog of
//   twice the slots queued); --impl idle: the same bus, started, no
//   messages. Reports p50/p99 and, for busy, the endpoint's rate while the
//   requests ran (to show every slot was blocked).
#include <atomic>
#include <thread>

#include <caf/all.hpp>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "measure.hpp"
#include "raw_pool.hpp"
#include "workload.hpp"

namespace bench {

namespace {

bus::handler_threads handler_threads_arg(const case_args& args) {
  auto text = args.text("handler-threads", "dedicated");
  if (text != "caf_workers" && text != "dedicated")
    throw std::runtime_error("--handler-threads is caf_workers or dedicated");
  return text == "dedicated" ? bus::handler_threads::dedicated : bus::handler_threads::caf_workers;
}

} // namespace

case_result run_blocking(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto slots = static_cast<int>(args.number("slots", 8));
  auto block = std::chrono::milliseconds(args.number("block-ms", 10));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 25 * slots));

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  completion done;
  auto on_message = [&done, block](const ping&) {
    std::this_thread::sleep_for(block);
    done.complete();
  };

  bench_bus b;
  caf::actor pool;
  std::function<void(ping)> send;
  if (impl == "bus") {
    b = make_bench_bus(sys, slots, handler_threads_arg(args),
                       [&](const ping& m, bus::handler_context&) { on_message(m); });
    if (auto ok = b.bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    send = [&](ping p) { (void)b.bus->send(bench_queue, p); };
  } else {
    auto work = std::make_shared<raw_work>();
    work->handle = [&](const ping& m, int) { on_message(m); };
    pool = spawn_raw_pool(sys, slots, work, true);
    send = [&](ping p) { caf::anon_send(pool, p); };
  }

  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 120));
  auto start = steady::now();
  for (std::uint64_t i = 0; i < messages; ++i)
    send(ping{i, now_ns()});
  bool finished = done.wait_for(messages, deadline);
  auto seconds = seconds_since(start);

  if (b.bus)
    b.bus->stop();
  if (pool)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);

  auto ideal = static_cast<double>(slots) * 1000.0 / static_cast<double>(block.count());
  auto rate = static_cast<double>(done.done()) / seconds;
  return {{"case", "blocking"},
          {"impl", impl},
          {"slots", slots},
          {"block_ms", block.count()},
          {"messages", messages},
          {"threads", args.number("threads", 2)},
          {"finished", finished},
          {"seconds", seconds},
          {"msgs_per_s", rate},
          {"ideal_msgs_per_s", ideal},
          {"ratio_to_ideal", rate / ideal},
          {"peak_rss_kb", peak_rss_kb()}};
}

case_result run_blocked_round_trip(const case_args& args) {
  auto impl = args.text("impl", "busy");
  if (impl != "busy" && impl != "idle")
    throw std::runtime_error("--impl is busy or idle");
  auto slots = static_cast<int>(args.number("slots", 64));
  auto block = std::chrono::milliseconds(args.number("block-ms", 10));
  auto requests = static_cast<std::size_t>(args.number("requests", 2'000));
  auto gap = std::chrono::microseconds(args.number("gap-us", 1'000));
  auto backlog = static_cast<std::uint64_t>(2 * slots);

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  completion done;
  auto b = make_bench_bus(sys, slots, handler_threads_arg(args),
                          [&](const ping&, bus::handler_context&) {
                            std::this_thread::sleep_for(block);
                            done.complete();
                          });
  if (auto ok = b.bus->start(); !ok)
    throw std::runtime_error(ok.error().message);

  // The feeder: keeps `backlog` messages sent and not yet handled.
  std::atomic<bool> feeding{impl == "busy"};
  std::uint64_t sent = 0;
  std::thread feeder([&] {
    while (feeding.load()) {
      while (sent < done.done() + backlog)
        (void)b.bus->send(bench_queue, ping{sent++, now_ns()});
      // Tops the backlog up every millisecond: pacing the load, far more
      // often than a 10 ms handler frees a slot; nothing waits on it.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  if (impl == "busy") // every slot busy before the first request
    done.wait_for(static_cast<std::uint64_t>(slots), steady::now() + std::chrono::seconds(30));

  // The user's own actor, on CAF's workers: answers an int with it + 1.
  auto responder = sys.spawn([]() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  fine_timer_slack();
  std::vector<double> us;
  us.reserve(requests);
  std::size_t failed = 0;
  auto handled_before = done.done();
  auto start = steady::now();
  {
    caf::scoped_actor self{sys};
    for (std::size_t i = 0; i < requests; ++i) {
      auto t0 = now_ns();
      self->request(responder, std::chrono::seconds(10), static_cast<int>(i))
          .receive([&](int) { us.push_back(static_cast<double>(now_ns() - t0) / 1000.0); },
                   [&](caf::error&) { ++failed; });
      std::this_thread::sleep_for(gap);
    }
  }
  auto seconds = seconds_since(start);
  auto handled_during = done.done() - handled_before;
  feeding = false;
  feeder.join();
  caf::anon_send_exit(responder, caf::exit_reason::user_shutdown);
  b.bus->stop();

  case_result r{{"case", "blocked_round_trip"},
                {"impl", impl},
                {"slots", slots},
                {"block_ms", block.count()},
                {"requests", requests},
                {"threads", args.number("threads", 2)},
                {"finished", failed == 0},
                {"failed", failed},
                {"seconds", seconds},
                {"endpoint_msgs_per_s", static_cast<double>(handled_during) / seconds},
                {"p50_us", quantile(us, 0.50)},
                {"p99_us", quantile(us, 0.99)},
                {"max_us", us.empty() ? 0.0 : us.back()},
                {"peak_rss_kb", peak_rss_kb()}};
  return r;
}

} // namespace bench
