// The worker process of the kill test (consumer_kill_test.cpp): one bus
// endpoint on the broker whose handler fails as each fault_probe says,
// under the policy of fault_probe.hpp, recording every step in a ledger.
//
//   BUS_RABBITMQ_URL=amqp://... rabbitmq_fault_worker ENDPOINT TYPE LEDGER SLOTS
//
// ENDPOINT is the endpoint (and its queue), TYPE the wire name of
// fault_probe. It writes "ready" to the ledger once it consumes, and runs
// until SIGTERM or SIGINT: then it stops the bus (draining what is in
// flight) and writes its counters as a "stats" line. The test kills the
// first instance with SIGKILL, which leaves no chance for any of that. A
// probe with crash_process set makes it exit at once with status 3.
//
// With BUS_FAULT_WORKER_STREAM set, the endpoint reads that stream from its
// first message instead (stream_kill_test.cpp), keeping its offset in
// BUS_FAULT_WORKER_OFFSETS, each handler call taking
// BUS_FAULT_WORKER_HANDLER_MS; a failure goes to the error queue at once,
// as on every stream.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <pthread.h>

#include "bus/bus.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "fault_probe.hpp"
#include "ledger.hpp"

namespace fault_worker {

// What the handler throws; the error queue names it in bus-fault-exception-type.
struct planned_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace fault_worker

namespace {

using bus::test::fault_probe;
using fault_worker::planned_failure;
namespace policy = bus::test::fault_policy;

// The steps of a message worth a ledger line; failed attempts are written
// by the handler itself, rate limiting does not apply here.
const char* ledger_kind(bus::event_kind kind) {
  switch (kind) {
    case bus::event_kind::received:
      return "received";
    case bus::event_kind::handled:
      return "handled";
    case bus::event_kind::immediate_retry:
      return "immediate_retry";
    case bus::event_kind::redelivery_scheduled:
      return "redelivery_scheduled";
    case bus::event_kind::dead_lettered:
      return "dead_lettered";
    case bus::event_kind::discarded:
      return "discarded";
    case bus::event_kind::skipped:
      return "skipped";
    case bus::event_kind::requeued:
      return "requeued";
    default:
      return nullptr;
  }
}

std::string counters_text(const bus::endpoint_stats& s) {
  return "received=" + std::to_string(s.received) + " handled=" + std::to_string(s.handled)
         + " failed_attempts=" + std::to_string(s.failed_attempts)
         + " immediate_retries=" + std::to_string(s.immediate_retries)
         + " redeliveries_scheduled=" + std::to_string(s.redeliveries_scheduled)
         + " dead_lettered=" + std::to_string(s.dead_lettered)
         + " discarded=" + std::to_string(s.discarded) + " skipped=" + std::to_string(s.skipped)
         + " requeued=" + std::to_string(s.requeued) + " in_flight=" + std::to_string(s.in_flight);
}

int run(const std::string& endpoint, const std::string& type, const std::string& ledger_path,
        std::size_t slots) {
  bus::test::ledger_writer ledger(ledger_path);
  auto settings = bus::rabbitmq_settings_from_env();
  if (!settings) {
    std::fprintf(stderr, "fault worker: %s\n", to_string(settings.error()).c_str());
    return 2;
  }
  settings->delay_unit = bus::test::fault_delay_unit;
  settings->delay_levels = bus::test::fault_delay_levels;
  settings->heartbeat = std::chrono::seconds(5);
  settings->connection_name = "fault worker " + std::to_string(::getpid());
  auto transport = bus::rabbitmq_transport::connect(*settings);
  if (!transport) {
    std::fprintf(stderr, "fault worker: %s\n", to_string(transport.error()).c_str());
    return 1;
  }

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  const char* stream = std::getenv("BUS_FAULT_WORKER_STREAM");
  const char* pause_ms = std::getenv("BUS_FAULT_WORKER_HANDLER_MS");
  const auto pause = std::chrono::milliseconds(pause_ms ? std::atoi(pause_ms) : 0);
  bus::bus_builder b{sys};
  b.name("fault-worker")
      .transport(*transport)
      .message<fault_probe>(type)
      .observe([&ledger](const bus::bus_event& e) {
        if (auto kind = ledger_kind(e.kind))
          ledger.write(kind, e.message_id, e.delivery_count, e.attempt);
      });
  auto handle = [&](const fault_probe& m, bus::handler_context& ctx) {
    std::this_thread::sleep_for(pause);
    // The bus's message id, not the probe's: the test matches events,
    // attempts and the error queue by the id it sent.
    if (m.crash_process) {
      ledger.write("crash", ctx.message_id(), ctx.delivery_count(), ctx.attempt());
      std::_Exit(3); // no stop, no ack: the broker returns the delivery
    }
    bool fails = static_cast<int>(ctx.delivery_count()) < m.failing_deliveries
                 || (static_cast<int>(ctx.delivery_count()) == m.failing_deliveries
                     && ctx.attempt() <= m.failing_attempts);
    ledger.write("attempt", ctx.message_id(), ctx.delivery_count(), ctx.attempt(),
                 fails ? "failed=1" : "failed=0");
    if (fails)
      throw planned_failure("planned failure of " + m.id + " in delivery "
                            + std::to_string(ctx.delivery_count()) + ", attempt "
                            + std::to_string(ctx.attempt()));
  };
  if (stream) {
    const char* offsets = std::getenv("BUS_FAULT_WORKER_OFFSETS");
    b.stream_offset_directory(offsets ? offsets : "bus-stream-offsets")
      .stream_endpoint(endpoint, stream, [&](bus::endpoint_builder& e) {
        e.start_from(bus::stream_start::first()).slots(slots).handle<fault_probe>(handle);
      });
  } else {
    b.add_resilience([](bus::policy_builder& p) {
       p.on_any()
         .retry(policy::immediate_retries, policy::retry_delay, bus::backoff::constant)
         .jitter(false)
         .then_redeliver(policy::redelivery_delays)
         .jitter(false);
     }).endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.slots(slots).handle<fault_probe>(handle);
    });
  }
  auto built = b.build();
  if (!built) {
    std::fprintf(stderr, "fault worker: %s\n", built.error().message.c_str());
    return 2;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::fprintf(stderr, "fault worker: %s\n", to_string(started.error()).c_str());
    return 1;
  }
  ledger.write("ready");

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  bus.stop();
  ledger.write("stats", "-", 0, 0, counters_text(*bus.stats(endpoint)));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: rabbitmq_fault_worker ENDPOINT TYPE LEDGER SLOTS "
                         "(BUS_RABBITMQ_URL names the broker)\n");
    return 2;
  }
  // Blocked before any thread starts, so every thread inherits the mask and
  // only sigwait() in main takes the stop signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    return run(argv[1], argv[2], argv[3], static_cast<std::size_t>(std::atoi(argv[4])));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault worker: %s\n", e.what());
    return 1;
  }
}
