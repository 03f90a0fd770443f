// bus-stress: drives a topology of endpoints on real threads with random
// failures, consumer deaths, a mix of exception policies and an optional
// outage, then checks the bus's invariants and prints them as a report.
// See `bus-stress --help`.
#include <cstdio>
#include <iostream>
#include <random>

#include <caf/all.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "invariants.hpp"
#include "messages.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "topology.hpp"
#include "transport_choice.hpp"

namespace {

using steady = std::chrono::steady_clock;
using namespace stress;

constexpr int exit_broken = 1;
constexpr int exit_usage = 2;

std::shared_ptr<spdlog::sinks::sink> log_sink(const options& o) {
  if (o.log_file.empty())
    return std::make_shared<spdlog::sinks::null_sink_mt>();
  return std::make_shared<spdlog::sinks::basic_file_sink_mt>(o.log_file, /*truncate=*/true);
}

void print_plan(const options& o, const std::vector<endpoint_plan>& plan) {
  auto amount = std::to_string(o.messages) + " messages";
  if (o.duration_ms)
    amount = "for " + std::to_string(*o.duration_ms) + " ms (at most " + amount + ")";
  auto limit = o.rate_limit_threshold > 0 ? std::to_string(o.rate_limit_threshold) + " failures, "
                                                + std::to_string(o.rate_limit_wait_ms) + " ms wait"
                                          : std::string("off");
  std::printf("bus-stress: seed %llu, %d endpoints, %s, window %llu, failure rate %.3g, death "
              "rate %.3g, actor share %.3g, publish share %.3g, outage %d ms, rate limit %s, %d "
              "threads\n",
              static_cast<unsigned long long>(o.seed), o.endpoints, amount.c_str(),
              static_cast<unsigned long long>(o.window), o.failure_rate, o.death_rate,
              o.actor_share, o.publish_share, o.outage_ms, limit.c_str(), o.threads);
  for (std::size_t i = 0; i < plan.size(); ++i)
    std::printf("%s%s: %d slot%s, %s%s", i % 4 == 0 ? "  " : "; ", plan[i].name.c_str(),
                plan[i].slots, plan[i].slots == 1 ? "" : "s", to_string(plan[i].policy),
                i % 4 == 3 || i + 1 == plan.size() ? "\n" : "");
  std::fflush(stdout);
}

// Whether every endpoint has settled: nothing in flight, nothing waiting
// for redelivery.
bool settled(const bus::message_bus& bus, const std::vector<endpoint_plan>& plan) {
  for (const auto& p : plan) {
    auto s = bus.stats(p.name);
    if (!s || s->in_flight != 0 || s->pending_redelivery != 0)
      return false;
  }
  return true;
}

// Sends the workload, at most `window` deliveries unfinished at once, and
// starts the outage a quarter of the way through. Returns false if the
// deadline passed or a send failed.
bool produce(run_context& run, bus::message_bus& bus, const std::vector<endpoint_plan>& plan,
             traffic& sent, steady::time_point deadline) {
  const auto& o = run.opts;
  std::mt19937_64 random(o.seed + 1);
  std::uniform_real_distribution<double> share(0.0, 1.0);
  auto start = steady::now();
  auto duration = o.duration_ms ? std::chrono::milliseconds(*o.duration_ms) : steady::duration{};
  bool outage_started = o.outage_ms == 0;
  for (std::uint64_t seq = 0; seq < o.messages; ++seq) {
    auto elapsed = steady::now() - start;
    if (o.duration_ms && elapsed >= duration)
      break;
    if (!outage_started && (o.duration_ms ? elapsed >= duration / 4 : seq >= o.messages / 4)) {
      run.start_outage();
      outage_started = true;
    }
    auto room = [&] { return sent.deliveries.load() - run.book.ended() < o.window; };
    if (!run.book.wait_until(room, deadline))
      return false;
    bus::result<void> ok;
    const auto& target = plan[random() % plan.size()].name;
    bool publish = share(random) < o.publish_share;
    bool by_actor = share(random) < o.actor_share;
    // Counted before sending: the observer may see the end at once.
    sent.deliveries += publish ? plan.size() : 1;
    if (by_actor)
      ok = publish ? bus.publish(actor_job{seq}) : bus.send(target, actor_job{seq});
    else
      ok = publish ? bus.publish(job{seq}) : bus.send(target, job{seq});
    if (!ok) {
      std::fprintf(stderr, "bus-stress: cannot send: %s\n", ok.error().message.c_str());
      return false;
    }
    ++sent.messages;
  }
  return true;
}

// Whether every rate limiting episode has ended, as the counters and the
// event stream tell (the circuit breaker reports apart from the endpoint).
bool recovered(const run_context& run, const bus::message_bus& bus) {
  for (int i = 0; i < run.book.endpoint_count(); ++i) {
    const auto& t = run.book.tally(i);
    auto s = bus.stats(t.name);
    if (!s || s->rate_limited
        || t.count(bus::event_kind::rate_limit_started)
               != t.count(bus::event_kind::rate_limit_ended))
      return false;
  }
  return true;
}

// Waits until every delivery sent has ended and every endpoint settled
// (and, if `recovery`, every rate limiting episode ended).
bool drain(run_context& run, const bus::message_bus& bus, const std::vector<endpoint_plan>& plan,
           const traffic& sent, bool recovery, steady::time_point deadline) {
  return run.book.wait_until(
      [&] {
        return run.book.ended() == sent.deliveries.load() && settled(bus, plan)
               && (!recovery || recovered(run, bus));
      },
      deadline);
}

std::vector<check> run_stress(const options& o, const chosen_transport& transport) {
  std::mt19937_64 random(o.seed);
  auto plan = draw_topology(o, transport.names, random);
  print_plan(o, plan);
  std::vector<std::pair<std::string, int>> endpoints;
  for (const auto& p : plan)
    endpoints.emplace_back(p.name, p.slots);
  auto run = std::make_shared<run_context>(o, std::move(endpoints));

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", o.threads);
  caf::actor_system sys{cfg};
  auto handler_actors = spawn_handler_actors(sys, run);
  bus::bus_builder b{sys};
  b.name("bus-stress")
      .transport(transport.transport)
      .log_sinks({log_sink(o)})
      .jitter_seed(o.seed)
      .observe([run](const bus::bus_event& e) { run->book.record(e); })
      .message<job>(transport.names + "_job")
      .message<actor_job>(transport.names + "_actor_job")
      .message<probe>(transport.names + "_probe");
  add_endpoints(b, plan, handler_actors, run);
  auto built = b.build();
  if (!built) {
    for (auto& a : handler_actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return {{"the topology builds", false, built.error().message}};
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    for (auto& a : handler_actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return {{"the bus starts", false, started.error().message}};
  }

  auto start = steady::now();
  auto deadline = start + std::chrono::seconds(o.max_seconds);
  traffic sent;
  sent.planned = o.duration_ms ? 0 : o.messages;
  bool in_time;
  {
    progress_line progress(*run, bus, sent);
    in_time =
        produce(*run, bus, plan, sent, deadline) && drain(*run, bus, plan, sent, false, deadline);
    // A probe per endpoint that cannot fail: an endpoint that the run's
    // last failures left rate limited recovers, so every episode can end.
    for (std::size_t i = 0; in_time && i < plan.size(); ++i) {
      sent.deliveries += 1;
      in_time = static_cast<bool>(bus.send(plan[i].name, probe{o.messages + i}));
    }
    in_time = in_time && drain(*run, bus, plan, sent, true, deadline);
  }
  run_facts facts;
  facts.expected_deliveries = sent.deliveries.load();
  facts.finished_in_time = in_time;
  facts.seconds = std::chrono::duration<double>(steady::now() - start).count();
  bus.stop();
  for (auto& a : handler_actors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  return check_invariants(*run, bus, transport, facts);
}

} // namespace

int main(int argc, char** argv) {
  auto parsed = parse(argc, argv);
  if (parsed.help) {
    std::cout << usage();
    return 0;
  }
  if (!parsed.mistakes.empty()) {
    for (const auto& m : parsed.mistakes)
      std::cerr << "bus-stress: " << m << "\n";
    std::cerr << "bus-stress: see --help\n";
    return exit_usage;
  }
  auto o = *parsed.value;
  if (o.seed == 0)
    o.seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  auto transport = choose_transport(o);
  if (!transport) {
    std::cerr << "bus-stress: " << transport.error().message << "\n";
    return exit_usage;
  }

  auto checks = run_stress(o, *transport); // the actor system is gone when it returns
  int broken = 0;
  std::printf("bus-stress: invariants\n");
  for (const auto& c : checks) {
    broken += !c.held;
    std::printf("  %-4s %s: %s\n", c.held ? "ok" : "FAIL", c.invariant.c_str(), c.detail.c_str());
  }
  if (broken > 0) {
    std::printf("bus-stress: INVARIANT BROKEN: %d of %zu checks failed (seed %llu)\n", broken,
                checks.size(), static_cast<unsigned long long>(o.seed));
    return exit_broken;
  }
  std::printf("bus-stress: every invariant held (%zu checks, seed %llu)\n", checks.size(),
              static_cast<unsigned long long>(o.seed));
  return 0;
}
