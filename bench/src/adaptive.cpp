// The adaptive-slots case (issue 23): every handler calls a simulated
// dependency whose latency grows past its capacity, latency = base x
// max(1, in_flight / capacity) (a sleep: the dependency's time, on the
// handler's own thread), and every message is sent at once, so the
// endpoint always has work. --slots N: fixed slots; --slots adaptive:
// adaptive_slots from 1 to 64 (--alpha, --beta, --threshold,
// --probe-multiplier and --smoothing set its fields). Reports messages/s
// against the dependency's best (capacity / base), the calls' p50 and p99
// (what the dependency's other users feel), and the limit at the end.
#include <atomic>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "measure.hpp"
#include "workload.hpp"

namespace bench {

namespace {

class simulated_dependency {
public:
  simulated_dependency(double capacity, std::chrono::microseconds base)
      : capacity_(capacity), base_(base) {}

  // One call; returns how long it took, in microseconds.
  double call() {
    auto at_once = static_cast<double>(in_flight_.fetch_add(1) + 1);
    auto start = steady::now();
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::microseconds>(
        base_ * std::max(1.0, at_once / capacity_)));
    in_flight_.fetch_sub(1);
    return std::chrono::duration<double, std::micro>(steady::now() - start).count();
  }

private:
  std::atomic<int> in_flight_{0};
  double capacity_;
  std::chrono::microseconds base_;
};

} // namespace

case_result run_adaptive(const case_args& args) {
  auto slots_text = args.text("slots", "adaptive");
  bool adaptive = slots_text == "adaptive";
  auto slots = adaptive ? 64 : std::stoi(slots_text);
  auto capacity = args.real("capacity", 8);
  auto base = std::chrono::microseconds(args.number("base-us", 5'000));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 2'000));

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  simulated_dependency dependency(capacity, base);
  std::vector<double> calls_us(messages);
  completion done;
  std::optional<bus::adaptive_slots> limits;
  if (adaptive) {
    // Vegas's settings, each settable (bus/concurrency_limit.hpp): the
    // defaults unless given.
    limits = bus::adaptive_slots{1, 64};
    limits->alpha = args.real("alpha", limits->alpha);
    limits->beta = args.real("beta", limits->beta);
    limits->threshold = args.real("threshold", limits->threshold);
    limits->probe_multiplier = args.real("probe-multiplier", limits->probe_multiplier);
    limits->smoothing = args.real("smoothing", limits->smoothing); // build() validates them
  }
  auto b = make_bench_bus(
      sys, slots, bus::handler_threads::dedicated,
      [&](const ping& m, bus::handler_context&) {
        calls_us[m.seq] = dependency.call();
        done.complete();
      },
      {}, {}, false, limits);
  if (auto ok = b.bus->start(); !ok)
    throw std::runtime_error(ok.error().message);

  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 120));
  auto start = steady::now();
  for (std::uint64_t i = 0; i < messages; ++i)
    (void)b.bus->send(bench_queue, ping{i, now_ns()});
  bool finished = done.wait_for(messages, deadline);
  auto seconds = seconds_since(start);
  auto limit = b.bus->stats(bench_queue).value_or(bus::endpoint_stats{}).concurrency_limit;
  b.bus->stop();

  auto best = capacity * 1e6 / static_cast<double>(base.count());
  auto rate = static_cast<double>(done.done()) / seconds;
  return {{"case", "adaptive"},
          {"slots", slots_text},
          {"capacity", capacity},
          {"base_us", base.count()},
          {"messages", messages},
          {"threads", args.number("threads", 2)},
          {"finished", finished},
          {"seconds", seconds},
          {"msgs_per_s", rate},
          {"best_msgs_per_s", best},
          {"ratio_to_best", rate / best},
          {"call_p50_us", quantile(calls_us, 0.5)},
          {"call_p99_us", quantile(calls_us, 0.99)},
          {"limit_at_end", limit}};
}

} // namespace bench
