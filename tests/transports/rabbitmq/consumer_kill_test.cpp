// kill -9 of a consumer process in the middle of immediate retries, while
// redeliveries wait in the broker's delay levels: once a new process has
// taken over, every message has ended where its plan says, nothing is
// lost, and the only duplicates come from deliveries the dead process had
// not acknowledged (at least once).
//
// The consumer is rabbitmq_fault_worker (fault_worker.cpp): a bus endpoint
// whose handler fails as each message says, recording every step in an
// append-only ledger that this test reads to choose the moment of the kill
// and, afterwards, to check what happened on both sides of it.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker.hpp"
#include "bus/header_names.hpp"
#include "child_process.hpp"
#include "delay_levels.hpp"
#include "fault_probe.hpp"
#include "ledger.hpp"
#include "support/delivery_collector.hpp"
#include "support/envelope_text.hpp"
#include "support/eventually.hpp"
#include "support/file_text.hpp"

using namespace std::chrono_literals;
using bus::test::fault_probe;
using bus::test::ledger_entry;
namespace policy = bus::test::fault_policy;

namespace {

using bus::test::file_text;
using bus::test::header_or_missing;

constexpr std::size_t slots = 4;

// The messages, their kinds interleaved so that the slots hold a mix.
std::vector<fault_probe> make_plan() {
  struct kind {
    const char* name;
    int failing_deliveries;
    int failing_attempts;
    int count;
  };
  const kind kinds[] = {{"at-once", 0, 0, 8},
                        {"after-a-retry", 0, 1, 8},
                        {"after-a-redelivery", 1, 0, 6},
                        {"after-two-redeliveries-and-two-retries", 2, 2, 4},
                        {"never", policy::never(), 0, 5}};
  std::vector<fault_probe> plan;
  for (int round = 0; round < 8; ++round)
    for (const auto& k : kinds)
      if (round < k.count)
        plan.push_back({"probe-" + std::to_string(plan.size()) + "-" + k.name, k.failing_deliveries,
                        k.failing_attempts});
  return plan;
}

bool succeeds(const fault_probe& p) {
  return p.failing_deliveries < policy::never();
}

bus::envelope envelope_of(const fault_probe& p, const std::string& type,
                          const std::string& endpoint) {
  bus::envelope env;
  env.message_id = p.id;
  env.message_type = type;
  env.sent_at = std::chrono::system_clock::now();
  env.source_address = "consumer-kill-test";
  env.destination_address = endpoint;
  env.body = bus::message_body::text(nlohmann::json(p).dump());
  return env;
}

bool is_outcome(const std::string& kind) {
  return kind == "handled" || kind == "dead_lettered" || kind == "redelivery_scheduled"
         || kind == "discarded" || kind == "skipped" || kind == "requeued";
}

bool is_terminal(const std::string& kind) {
  return kind == "handled" || kind == "dead_lettered" || kind == "discarded" || kind == "skipped";
}

using delivery_key = std::pair<std::string, std::uint32_t>; // (message id, delivery count)

// One process's view of the messages, from its ledger lines in order.
struct process_view {
  struct current_delivery {
    std::uint32_t delivery = 0;
    bool ended = false; // an outcome was recorded
    int retries = 0;    // immediate retries so far
    std::int64_t first_failure_at = 0;
  };
  std::map<std::string, current_delivery> current; // by message id
  std::map<delivery_key, std::int64_t> scheduled;  // redelivery (id, next delivery) -> when
  std::multiset<delivery_key> received;
  std::map<std::string, std::size_t> count; // lines by kind
  std::optional<ledger_entry> ready, stats;

  process_view(const std::vector<ledger_entry>& ledger, int pid) {
    for (const auto& e : ledger) {
      if (e.pid != pid)
        continue;
      ++count[e.kind];
      if (e.kind == "ready")
        ready = e;
      else if (e.kind == "stats")
        stats = e;
      else if (e.kind == "received") {
        current[e.id] = current_delivery{e.delivery, false, 0, 0};
        received.insert({e.id, e.delivery});
      } else if (e.kind == "immediate_retry") {
        auto& d = current[e.id];
        if (d.retries++ == 0)
          d.first_failure_at = e.at_ms;
      } else if (is_outcome(e.kind)) {
        current[e.id].ended = true;
        if (e.kind == "redelivery_scheduled")
          scheduled[{e.id, e.delivery + 1}] = e.at_ms;
      }
    }
  }

  // Deliveries in the middle of their immediate retries: failed at least
  // once, no outcome yet.
  std::set<delivery_key> mid_retry() const {
    std::set<delivery_key> out;
    for (const auto& [id, d] : current)
      if (!d.ended && d.retries > 0)
        out.insert({id, d.delivery});
    return out;
  }

  // Deliveries taken and not ended (mid-retry or mid-attempt).
  std::set<delivery_key> unfinished() const {
    std::set<delivery_key> out;
    for (const auto& [id, d] : current)
      if (!d.ended)
        out.insert({id, d.delivery});
    return out;
  }

  // Redeliveries scheduled that this process has not received (yet): the
  // broker holds them in its delay levels.
  std::set<delivery_key> pending_redeliveries() const {
    std::set<delivery_key> out;
    for (const auto& [key, at] : scheduled)
      if (received.count(key) == 0)
        out.insert(key);
    return out;
  }
};

// Whether a kill now lands in the middle of immediate retries with a
// redelivery waiting in the broker, each for at least `margin` more: a
// loaded machine may take a while to deliver the signal.
bool good_moment_to_kill(const process_view& v, const std::map<std::string, fault_probe>& plan,
                         std::chrono::milliseconds margin) {
  auto now = bus::test::monotonic_ms();
  auto retry_ms = policy::retry_delay.count();
  bool retrying = std::any_of(v.current.begin(), v.current.end(), [&](const auto& kv) {
    const auto& [id, d] = kv;
    if (d.ended || d.retries == 0)
      return false;
    // The delivery ends at the attempt that succeeds or at the last retry.
    const auto& p = plan.at(id);
    int failing = static_cast<int>(d.delivery) < p.failing_deliveries
                      ? policy::immediate_retries + 1
                      : p.failing_attempts;
    auto ends_at = d.first_failure_at + std::min(failing, policy::immediate_retries) * retry_ms;
    return ends_at - now >= margin.count();
  });
  bool held = std::any_of(v.scheduled.begin(), v.scheduled.end(), [&](const auto& kv) {
    const auto& [key, at] = kv;
    auto delay = policy::redelivery_delays.at(key.second - 1).count();
    return v.received.count(key) == 0 && at + delay - now >= margin.count();
  });
  return retrying && held;
}

// A printable summary of a ledger, for failed checks.
std::string tail_of(const std::vector<ledger_entry>& ledger, std::size_t n = 40) {
  std::ostringstream out;
  for (auto i = ledger.size() > n ? ledger.size() - n : 0; i < ledger.size(); ++i) {
    const auto& e = ledger[i];
    out << e.at_ms << ' ' << e.pid << ' ' << e.kind << ' ' << e.id << ' ' << e.delivery << ' '
        << e.attempt << '\n';
  }
  return out.str();
}

struct worker_files {
  std::string dir;
  std::string ledger() const { return dir + "/ledger"; }
  std::string output() const { return dir + "/worker.out"; }
};

worker_files make_worker_dir() {
  std::string pattern = "/tmp/bus-consumer-kill-XXXXXX";
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return {pattern};
}

std::unique_ptr<bus::test::child_process>
start_worker(const worker_files& files, const std::string& endpoint, const std::string& type) {
  auto worker = std::make_unique<bus::test::child_process>(
      BUS_FAULT_WORKER,
      std::vector<std::string>{endpoint, type, files.ledger(), std::to_string(slots)},
      std::vector<std::string>{"BUS_RABBITMQ_URL=" + bus::test::broker_env("BUS_RABBITMQ_URL")},
      files.output());
  // Ready once it consumes; a worker that dies first fails the test at once.
  bool ready = bus::test::eventually(
      [&] {
        if (!worker->running())
          return true;
        process_view v(bus::test::read_ledger(files.ledger()), worker->pid());
        return v.ready.has_value();
      },
      30s);
  INFO("worker output:\n" << file_text(files.output()));
  REQUIRE(worker->running());
  REQUIRE(ready);
  return worker;
}

} // namespace

TEST_CASE("kill -9 of a consumer in the middle of retries, with redeliveries pending, loses "
          "nothing, and a new process ends every message as planned",
          "[rabbitmq][bus][kill]") {
  auto endpoint = bus::test::unique_name("kill.billing");
  auto error_queue = endpoint + "_error";
  auto type = bus::test::unique_name("fault_probe");
  auto files = make_worker_dir();
  auto plan = make_plan();
  std::map<std::string, fault_probe> by_id;
  for (const auto& p : plan)
    by_id[p.id] = p;
  INFO("worker files in " << files.dir);

  // 1. The first worker takes the messages, fails, retries, schedules
  //    redeliveries; it is killed in the middle of that.
  auto first = start_worker(files, endpoint, type);
  auto producer = bus::test::connect_transport();
  for (const auto& p : plan)
    REQUIRE(producer->send(endpoint, envelope_of(p, type, endpoint)));
  bool moment = bus::test::eventually(
      [&] {
        return good_moment_to_kill(
            process_view(bus::test::read_ledger(files.ledger()), first->pid()), by_id, 400ms);
      },
      30s, 5ms);
  first->signal(SIGKILL);
  auto killed = first->wait(10s);
  REQUIRE(killed);
  REQUIRE(WIFSIGNALED(*killed));
  REQUIRE(WTERMSIG(*killed) == SIGKILL);
  INFO("ledger:\n" << tail_of(bus::test::read_ledger(files.ledger())));
  REQUIRE(moment);

  // What the kill cut, from the dead process's complete ledger.
  auto ledger = bus::test::read_ledger(files.ledger());
  const process_view before(ledger, first->pid());
  auto cut_mid_retry = before.mid_retry();
  auto cut_unfinished = before.unfinished();
  auto held_by_broker = before.pending_redeliveries();
  CHECK_FALSE(before.stats); // it had no chance to write them
  REQUIRE_FALSE(cut_mid_retry.empty());
  REQUIRE_FALSE(held_by_broker.empty());
  CHECK(cut_unfinished.size() <= slots);

  // 2. A new process on the same queue finishes the work.
  auto second = start_worker(files, endpoint, type);
  bus::detail::delay_levels levels(bus::test::fault_delay_levels, bus::test::fault_delay_unit);
  std::vector<std::string> broker_queues{endpoint};
  for (unsigned k = 0; k < levels.count(); ++k)
    broker_queues.push_back(levels.level_name(k));
  // Done when every message has ended, the new process has settled every
  // delivery it took, and the broker holds nothing more for the endpoint:
  // neither in its queue (ready or unacknowledged) nor in the delay levels.
  // rabbitmqctl is slow, so it is asked only once the ledger says done.
  bool done = bus::test::eventually(
      [&] {
        auto now = bus::test::read_ledger(files.ledger());
        std::set<std::string> ended;
        for (const auto& e : now)
          if (is_terminal(e.kind))
            ended.insert(e.id);
        process_view after(now, second->pid());
        std::size_t outcomes = 0;
        for (const auto& [kind, n] : after.count)
          if (is_outcome(kind))
            outcomes += n;
        if (ended.size() < plan.size() || outcomes != after.count["received"])
          return false;
        auto depths = bus::test::queue_depths();
        return std::all_of(broker_queues.begin(), broker_queues.end(),
                           [&](const std::string& q) { return depths[q] == 0; });
      },
      60s, 50ms);
  second->signal(SIGTERM);
  auto stopped = second->wait(60s);
  ledger = bus::test::read_ledger(files.ledger());
  INFO("ledger:\n" << tail_of(ledger) << "worker output:\n" << file_text(files.output()));
  REQUIRE(done);
  REQUIRE(stopped);
  CHECK(WIFEXITED(*stopped));
  CHECK(WEXITSTATUS(*stopped) == 0);
  const process_view after(ledger, second->pid());

  // Nothing lost: each message ended, and in one class only, the one its
  // plan says, in the delivery and attempt the plan says.
  std::map<std::string, std::multiset<std::string>> ends; // id -> terminal kinds
  for (const auto& e : ledger) {
    if (!is_terminal(e.kind))
      continue;
    ends[e.id].insert(e.kind);
    const auto& p = by_id.at(e.id);
    INFO(e.kind << " " << e.id << " in delivery " << e.delivery << ", attempt " << e.attempt);
    if (succeeds(p)) {
      CHECK(e.kind == "handled");
      CHECK(e.delivery == static_cast<std::uint32_t>(p.failing_deliveries));
      CHECK(e.attempt == p.failing_attempts + 1);
    } else {
      CHECK(e.kind == "dead_lettered");
      CHECK(e.delivery == static_cast<std::uint32_t>(policy::redeliveries()));
      CHECK(e.attempt == policy::immediate_retries + 1);
    }
  }
  CHECK(ends.size() == plan.size());

  // Whatever the kill cut came again to the new process: the deliveries it
  // had not finished (from the broker's queue) and the redeliveries it had
  // scheduled (from the delay levels).
  for (const auto& key : cut_unfinished) {
    INFO("cut by the kill: " << key.first << " in delivery " << key.second);
    CHECK(after.received.count(key) >= 1);
  }
  for (const auto& key : held_by_broker) {
    INFO("held by the broker at the kill: " << key.first << " for delivery " << key.second);
    CHECK(after.received.count(key) >= 1);
  }

  // At least once, bounded: a delivery comes to both processes only if the
  // first had not acknowledged it when it died, and at most `slots` (the
  // prefetch) were unacknowledged. Such a delivery may have ended in the
  // first process already (handled, or its redelivery scheduled, with the
  // ack lost in the kill): only those may end twice, once per process.
  std::set<delivery_key> returned;
  for (const auto& key : after.received)
    if (before.received.count(key) > 0)
      returned.insert(key);
  std::set<std::string> returned_ids;
  for (const auto& key : returned)
    returned_ids.insert(key.first);
  CHECK(returned.size() <= slots);
  std::size_t extra_ends = 0;
  for (const auto& [id, kinds] : ends) {
    if (kinds.size() == 1)
      continue;
    INFO(id << " ended " << kinds.size() << " times");
    CHECK(returned_ids.count(id) == 1);
    extra_ends += kinds.size() - 1;
  }
  CHECK(extra_ends <= returned.size());

  // The new process's counters reconcile, and agree with its ledger.
  REQUIRE(after.stats);
  auto s = after.stats->values;
  INFO("counters of the new process: received "
       << s["received"] << ", handled " << s["handled"] << ", dead-lettered " << s["dead_lettered"]
       << ", scheduled " << s["redeliveries_scheduled"] << ", in flight " << s["in_flight"]);
  CHECK(s["received"]
        == s["handled"] + s["dead_lettered"] + s["discarded"] + s["skipped"] + s["requeued"]
               + s["redeliveries_scheduled"] + s["in_flight"]);
  CHECK(s["in_flight"] == 0);
  CHECK(s["requeued"] == 0);
  CHECK(s["discarded"] == 0);
  CHECK(s["skipped"] == 0);
  auto lines = after.count;
  CHECK(s["received"] == static_cast<std::int64_t>(lines["received"]));
  CHECK(s["handled"] == static_cast<std::int64_t>(lines["handled"]));
  CHECK(s["dead_lettered"] == static_cast<std::int64_t>(lines["dead_lettered"]));
  CHECK(s["redeliveries_scheduled"] == static_cast<std::int64_t>(lines["redelivery_scheduled"]));

  // The broker holds nothing more for the endpoint (the worker is gone, so
  // nothing is unacknowledged: ready counts are all there is).
  auto reader = bus::test::connect_transport();
  for (const auto& q : broker_queues) {
    INFO("queue " << q);
    CHECK(reader->message_count(q).value() == 0);
  }

  // The error queue holds exactly the messages that never succeed, each
  // with the fault headers of its last attempt; a second copy only for a
  // delivery the kill returned.
  auto parked = reader->message_count(error_queue);
  REQUIRE(parked);
  bus::test::delivery_collector errors;
  REQUIRE(reader->consume(error_queue, 50, errors.handler()));
  REQUIRE(errors.wait_for(*parked));
  std::set<std::string> on_error_queue;
  std::set<std::string> never;
  for (const auto& p : plan)
    if (!succeeds(p))
      never.insert(p.id);
  namespace h = bus::header;
  for (const auto& d : errors.items()) {
    const auto& m = *d.message;
    on_error_queue.insert(m.message_id);
    INFO("on the error queue: " << m.message_id);
    CHECK(header_or_missing(m, h::fault_exception_type) == "fault_worker::planned_failure");
    CHECK_THAT(header_or_missing(m, h::fault_message),
               Catch::StartsWith("planned failure of " + m.message_id));
    CHECK(header_or_missing(m, h::fault_endpoint) == endpoint);
    CHECK(header_or_missing(m, h::fault_original_address) == endpoint);
    CHECK(header_or_missing(m, h::fault_delivery_count) == std::to_string(policy::redeliveries()));
    CHECK(header_or_missing(m, h::fault_immediate_retries)
          == std::to_string(policy::immediate_retries));
    CHECK(reader->ack(d.tag));
  }
  CHECK(on_error_queue == never);
  CHECK(errors.size() - never.size() <= returned.size());
  // A REQUIRE that failed above left the folder for a look at the ledger.
  std::filesystem::remove_all(files.dir);
}
