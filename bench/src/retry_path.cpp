// The failure path: N messages of which every --fail-every-th fails its
// first attempt and succeeds on the next, against the same run with no
// failure (--fail-every 0). The next attempt is an immediate retry (the
// policy retry(1, 0ms)), or with --redeliver-after-ms D a redelivery D
// later (redeliver({D}), no jitter), which the endpoint's scheduler holds
// while the slot goes on. On the bus, or on the raw CAF pool retrying the
// same way (a delayed message to itself). With --window at least N the
// sender does not wait for handled messages: the time runs from the first
// send to the last handled, as a redelivery's wait needs.
#include <caf/all.hpp>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "measure.hpp"
#include "producer.hpp"
#include "raw_pool.hpp"
#include "workload.hpp"

using namespace std::chrono_literals;

namespace bench {

case_result run_retry_path(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto slots = static_cast<int>(args.number("slots", 8));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 1'000'000));
  auto window = static_cast<std::uint64_t>(args.number("window", 1'000));
  auto fail_every = static_cast<std::uint64_t>(args.number("fail-every", 10));
  // Negative: an immediate retry.
  auto redeliver_after = std::chrono::milliseconds(args.number("redeliver-after-ms", -1));
  const bool redelivers = redeliver_after.count() >= 0;
  auto threads = args.number("threads", 2);

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  completion done;
  // Fails the first attempt of every fail_every-th message.
  auto attempt = [&done, fail_every](const ping& m, int n) {
    if (fail_every > 0 && m.seq % fail_every == 0 && n == 1)
      throw bench_failure();
    done.complete();
  };

  bench_bus b;
  caf::actor pool;
  std::function<void(ping)> send;
  if (impl == "bus") {
    b = make_bench_bus(
        sys, slots, bus::handler_threads::caf_workers,
        // Attempts counted across deliveries: a redelivered message's
        // first attempt in its new delivery is its second.
        [&](const ping& m, bus::handler_context& ctx) {
          attempt(m, ctx.attempt() + static_cast<int>(ctx.delivery_count()));
        },
        [&](bus::policy_builder& p) {
          if (redelivers)
            p.on_any().redeliver({redeliver_after}).jitter(false);
          else
            p.on_any().retry(1, 0ms);
        });
    if (auto ok = b.bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    send = [&](ping p) { (void)b.bus->send(bench_queue, p); };
  } else {
    auto work = std::make_shared<raw_work>();
    work->handle = attempt;
    work->retry_delay = redelivers ? redeliver_after : 0ms;
    work->redeliver = redelivers;
    pool = spawn_raw_pool(sys, slots, work);
    send = [&](ping p) { caf::anon_send(pool, p); };
  }

  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 300));
  auto start = steady::now();
  bool finished = send_closed_loop(send, done, messages, window, deadline);
  auto seconds = seconds_since(start);

  std::uint64_t retries = 0, redeliveries = 0;
  if (b.bus) {
    b.bus->stop();
    auto stats = b.bus->stats(bench_queue);
    retries = stats->immediate_retries;
    redeliveries = stats->redeliveries_scheduled;
  }
  if (pool)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  return {{"case", "retry_path"},
          {"impl", impl},
          {"slots", slots},
          {"messages", messages},
          {"fail_every", fail_every},
          {"redeliver_after_ms", redeliver_after.count()},
          {"window", window},
          {"threads", threads},
          {"finished", finished},
          {"seconds", seconds},
          {"msgs_per_s", static_cast<double>(done.done()) / seconds},
          {"bus_immediate_retries", retries},
          {"bus_redeliveries", redeliveries},
          {"peak_rss_kb", peak_rss_kb()}};
}

} // namespace bench
