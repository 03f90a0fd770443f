// Redeliveries pending in the scheduler: N messages each fail once and wait
// for redelivery, all due at one instant (--due-after-ms after the start).
// Measures the memory each pending message costs beyond its envelope, the
// time to schedule them all, and how fast they fire when they come due.
//
// On the bus, through the public API only: the handler fails a first
// delivery, and the policy redelivers once, with a delay function that
// aims every message at the same instant (jitter off). The raw baseline
// holds the same envelopes in CAF's clock with one scheduled_send each.
//
// Two kinds of run (--measure): memory, with a single malloc arena so that
// mallinfo2's count of bytes in use sees every thread (main() sets it up
// before any thread starts), stopping once all are pending; and time, with
// the default allocator (one arena slows every thread down), through the
// firing and the handling of every redelivered message.
#include <random>

#include <caf/all.hpp>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "bus/header_names.hpp"
#include "measure.hpp"
#include "workload.hpp"

namespace bench {
// A redelivered envelope in a raw CAF message, as the bus's scheduler holds it.
struct pending_envelope {
  std::shared_ptr<bus::envelope> envelope;
};
} // namespace bench

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::pending_envelope)

namespace bench {

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;

// When every redelivery is due, in steady_clock nanoseconds.
std::atomic<std::int64_t> due_ns{0};

bus::duration until_due() {
  auto left = std::chrono::nanoseconds(due_ns.load() - now_ns());
  return std::max(bus::duration(1), std::chrono::ceil<bus::duration>(left));
}

// Waits, polling every `step`, until `done()` or the deadline.
template <class Done>
bool poll_until(Done done, std::chrono::microseconds step, steady::time_point deadline) {
  while (!done()) {
    if (steady::now() >= deadline)
      return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

// Heap bytes of one copy of `sample` with a body of its own: what a
// pending redelivery holds as its envelope, measured by making `n` of them.
double envelope_bytes(const bus::envelope& sample, const bus::message_registry& registry,
                      std::uint64_t n) {
  std::vector<std::shared_ptr<bus::envelope>> copies;
  copies.reserve(n);
  auto before = heap_in_use();
  for (std::uint64_t i = 0; i < n; ++i) {
    auto e = std::make_shared<bus::envelope>(sample);
    e->body = *registry.make_body(ping{i, 0});
    copies.push_back(std::move(e));
  }
  return static_cast<double>(heap_in_use() - before) / static_cast<double>(n);
}

// An envelope as the bus redelivers it: an id, the routing fields, the
// trace context the bus starts on every send from outside (a W3C
// traceparent, 55 characters), the two history headers, a typed body.
// Without the traceparent the sample was 128 bytes short of the real
// thing, and those bytes were counted as the scheduler's.
bus::envelope redelivered_sample(const bus::message_registry& registry) {
  std::mt19937_64 random(42);
  bus::envelope e;
  e.message_id = bus::make_message_id(random(), random());
  e.message_type = "bench_ping";
  e.sent_at = std::chrono::system_clock::now();
  e.source_address = "bus";
  e.destination_address = bench_queue;
  e.delivery_count = 1;
  e.headers.set(bus::header::traceparent,
                "00-" + std::string(32, 'a') + "-" + std::string(16, 'b') + "-01");
  e.headers.set(bus::header::first_failure_at, std::to_string(bus::to_unix_ms(e.sent_at)));
  e.headers.set(bus::header::failed_attempts, "1");
  e.body = *registry.make_body(ping{});
  return e;
}

// What a run measures: memory (one malloc arena, so that mallinfo2 sees
// every thread; nothing fires: the bus stops once all are pending) or time
// (the default allocator; everything fires and is handled again).
enum class measuring { memory, time };

case_result bus_side(caf::actor_system& sys, std::uint64_t messages, int slots, measuring what,
                     std::chrono::milliseconds due_after, steady::time_point deadline) {
  completion redelivered;
  auto b = make_bench_bus(
      sys, slots, bus::handler_threads::caf_workers,
      [&](const ping&, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw bench_failure();
        redelivered.complete();
      },
      [](bus::policy_builder& p) {
        p.on_any()
            .redeliver(1, [](const std::exception_ptr&, int) { return until_due(); })
            .jitter(false);
      });
  auto& bus = *b.bus;
  auto pending = [&] { return bus.stats(bench_queue)->pending_redelivery; };
  auto n = static_cast<std::int64_t>(messages);
  // Measured first, while nothing else runs (the sample has the fields and
  // headers of a pending redelivery of this bus, as it holds them).
  auto envelope = what == measuring::memory
                      ? envelope_bytes(redelivered_sample(bus.registry()), bus.registry(), messages)
                      : 0.0;

  // The messages wait on the queue before the endpoint consumes it, so the
  // schedule time is the endpoint's work, not the sender's.
  (void)b.transport->declare_queue(bench_queue);
  auto heap_before = heap_in_use();
  for (std::uint64_t i = 0; i < messages; ++i)
    (void)bus.send(bench_queue, ping{i, 0});

  auto start = steady::now();
  auto due = start + due_after;
  due_ns = due.time_since_epoch().count();
  if (auto ok = bus.start(); !ok)
    throw std::runtime_error(ok.error().message);
  // A due time that comes first ends the wait: redeliveries fire then, and
  // all of them are never pending at once.
  bool ok = poll_until([&] { return pending() >= n || steady::now() >= due; },
                       std::chrono::microseconds(500), deadline);
  auto schedule_s = seconds_since(start);
  auto heap_pending = heap_in_use();
  bool overran = pending() < n && steady::now() >= due;

  if (what == measuring::memory) {
    bus.stop();
    auto per_pending = static_cast<double>(heap_pending - heap_before) / static_cast<double>(n);
    return {{"finished", ok},
            {"schedule_s_single_arena", schedule_s},
            {"bytes_per_pending", per_pending},
            {"envelope_bytes", envelope},
            {"bytes_beyond_envelope", per_pending - envelope}};
  }

  case_result r{{"finished", ok}, {"schedule_s", schedule_s}, {"overran_due_time", overran}};
  if (ok && !overran) {
    std::this_thread::sleep_until(due - std::chrono::milliseconds(2));
    ok = poll_until([&] { return pending() < n; }, std::chrono::microseconds(50), deadline);
    auto first_fire = steady::now();
    ok = ok && poll_until([&] { return pending() == 0; }, std::chrono::microseconds(100), deadline);
    auto all_fired = steady::now();
    ok = ok && redelivered.wait_for(messages, deadline);
    auto secs = [&](steady::time_point t) {
      return std::chrono::duration<double>(t - due).count();
    };
    r["finished"] = ok;
    r["first_fire_lag_ms"] = secs(first_fire) * 1000;
    r["fire_msgs_per_s"] = static_cast<double>(messages) / secs(all_fired);
    r["redelivered_handled_msgs_per_s"] = static_cast<double>(messages) / secs(steady::now());
  }
  bus.stop();
  return r;
}

case_result raw_side(caf::actor_system& sys, std::uint64_t messages, measuring what,
                     std::chrono::milliseconds due_after, steady::time_point deadline) {
  bus::message_registry registry;
  (void)registry.add<ping>("bench_ping");
  auto sample = redelivered_sample(registry);
  auto envelopes = std::make_shared<std::vector<std::shared_ptr<bus::envelope>>>();
  envelopes->reserve(messages);
  for (std::uint64_t i = 0; i < messages; ++i) {
    auto e = std::make_shared<bus::envelope>(sample);
    e->body = *registry.make_body(ping{i, 0});
    envelopes->push_back(std::move(e));
  }
  completion arrived;
  std::atomic<std::int64_t> first_arrival{0};
  auto target = sys.spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](const pending_envelope&) {
      if (arrived.done() == 0)
        first_arrival = now_ns();
      arrived.complete();
    }};
  });
  auto start = steady::now();
  auto due = start + due_after;
  auto scheduler = sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    return {[=](go_atom) {
      for (auto& e : *envelopes)
        self->scheduled_send(target, due, pending_envelope{std::move(e)});
    }};
  });
  auto heap_before = heap_in_use();
  double schedule_s = 0;
  {
    caf::scoped_actor self{sys};
    self->request(scheduler, caf::infinite, go_atom::value)
        .receive([&] { schedule_s = seconds_since(start); }, [](caf::error&) {});
  }
  auto heap_pending = heap_in_use();
  bool overran = steady::now() >= due;
  case_result r;
  if (what == measuring::memory) {
    // The envelopes existed before: all that was added is CAF's.
    auto per_pending =
        static_cast<double>(heap_pending - heap_before) / static_cast<double>(messages);
    r = {{"finished", true},
         {"schedule_s_single_arena", schedule_s},
         {"bytes_per_pending", per_pending},
         {"envelope_bytes", envelope_bytes(sample, registry, messages)},
         {"bytes_beyond_envelope", per_pending}};
  } else {
    bool ok = arrived.wait_for(messages, deadline);
    auto last = steady::now();
    r = {{"finished", ok}, {"schedule_s", schedule_s}, {"overran_due_time", overran}};
    if (ok && !overran) {
      auto first = steady::time_point(std::chrono::nanoseconds(first_arrival.load()));
      r["first_fire_lag_ms"] = std::chrono::duration<double, std::milli>(first - due).count();
      r["fire_msgs_per_s"] =
          static_cast<double>(messages) / std::chrono::duration<double>(last - due).count();
    }
  }
  // Pending timeouts hold the target; exit messages end both actors anyway.
  caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
  return r;
}

} // namespace

case_result run_redelivery(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto messages = static_cast<std::uint64_t>(args.number("messages", 1'000'000));
  auto slots = static_cast<int>(args.number("slots", 8));
  auto what = args.text("measure", "memory") == "memory" ? measuring::memory : measuring::time;
  // Memory runs never wait for the due time: an hour away.
  auto due_after = std::chrono::milliseconds(
      what == measuring::memory ? 3'600'000 : args.number("due-after-ms", 5'000));
  auto threads = args.number("threads", 2);
  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 300));

  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  auto r = impl == "bus" ? bus_side(sys, messages, slots, what, due_after, deadline)
                         : raw_side(sys, messages, what, due_after, deadline);
  r["measure"] = what == measuring::memory ? "memory" : "time";
  r["case"] = "redelivery";
  r["impl"] = impl;
  r["messages"] = messages;
  r["due_after_ms"] = due_after.count();
  r["threads"] = threads;
  r["peak_rss_kb"] = peak_rss_kb();
  return r;
}

} // namespace bench
