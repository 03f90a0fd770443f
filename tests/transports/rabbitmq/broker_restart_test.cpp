// A broker restart in the middle of a run: a producer keeps sending, each
// send confirmed, while a bus endpoint consumes, and the node is stopped
// and started again on its data. Every confirmed message is handled, the
// messages in flight at the restart come again instead of being
// acknowledged on a connection that no longer exists, the redeliveries the
// broker held in its delay levels come out, and both transports reconnect
// by themselves.
//
// The test restarts the node, so it runs on a node of its own (the ctest
// fixture rabbitmq_restart), never on the one the other RabbitMQ tests share.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "delay_levels.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;

namespace {

struct restart_probe {
  std::string id;
  bool fails_first = false; // fails its first delivery: redelivered through the delay levels
  bool held = false;        // its first attempt waits until the broker is back
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(restart_probe, id, fails_first, held)

constexpr std::size_t slots = 4;

// What the endpoint's handler did, shared with the test thread.
class handler_record {
public:
  // Blocks the first attempt of a held message until release(), or 120 s.
  void hold(const std::string& id) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!holding_started_.insert(id).second)
      return; // its second delivery goes through
    changed_.notify_all();
    changed_.wait_for(lock, 120s, [&] { return released_; });
  }
  void release() {
    std::lock_guard<std::mutex> guard(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  void failed_first(const std::string& id) {
    std::lock_guard<std::mutex> guard(mutex_);
    failed_first_.insert(id);
  }
  void handled(const std::string& id) {
    std::lock_guard<std::mutex> guard(mutex_);
    ++handled_[id];
    ++total_;
    changed_.notify_all();
  }

  bool wait_until_holding(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 30s, [&] { return holding_started_.size() >= n; });
  }
  bool wait_for_total(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 30s, [&] { return total_ >= n; });
  }
  std::map<std::string, int> handled() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return handled_;
  }
  // Failed on their first delivery and not handled since: their
  // redelivery is on its way through the broker.
  std::set<std::string> awaiting_redelivery() const {
    std::lock_guard<std::mutex> guard(mutex_);
    std::set<std::string> out;
    for (const auto& id : failed_first_)
      if (handled_.count(id) == 0)
        out.insert(id);
    return out;
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::string> holding_started_;
  bool released_ = false;
  std::set<std::string> failed_first_;
  std::map<std::string, int> handled_;
  std::size_t total_ = 0;
};

// Sends numbered messages, one at a time, until stopped: a send that
// returned success was confirmed by the broker.
class producer {
public:
  producer(bus::message_bus& bus, std::string endpoint)
      : bus_(bus), endpoint_(std::move(endpoint)), thread_([this] { run(); }) {}
  ~producer() { stop(); }

  void stop() {
    stopping_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  std::size_t confirmed_count() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return confirmed_.size();
  }
  std::vector<std::string> confirmed() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return confirmed_;
  }
  std::vector<std::string> refused() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return refused_;
  }

private:
  void run() {
    for (int i = 0; !stopping_; ++i) {
      restart_probe p{"m-" + std::to_string(i), i % 10 == 3, false};
      auto sent = bus_.send(endpoint_, p);
      std::lock_guard<std::mutex> guard(mutex_);
      (sent ? confirmed_ : refused_).push_back(p.id + (sent ? "" : ": " + to_string(sent.error())));
    }
  }

  bus::message_bus& bus_;
  std::string endpoint_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> confirmed_; // guarded
  std::vector<std::string> refused_;   // guarded
  std::thread thread_;
};

// Settings for a run that survives a restart: sends and declarations wait
// for the node to come back (it takes 10 s, and much longer on a loaded
// machine) rather than fail, and reconnects are tried at least every
// second so the test does not wait out a long backoff.
bus::rabbitmq_settings restart_settings(const std::string& name, bus::test::log_capture& log) {
  auto s = bus::test::test_settings();
  s.operation_timeout = 120s;
  s.reconnect_delay_min = 100ms;
  s.reconnect_delay_max = 1s;
  s.connection_name = name;
  s.log = log.sink();
  return s;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

} // namespace

TEST_CASE("a broker restart during a run loses no confirmed message, and the messages in flight "
          "at the restart are handled again",
          "[rabbitmq][bus][restart]") {
  auto endpoint = bus::test::unique_name("restart.billing");
  auto type = bus::test::unique_name("restart_probe");
  bus::test::log_capture consumer_log, producer_log;
  auto consumer_transport =
      bus::test::connect_transport(restart_settings("restart consumer", consumer_log));
  auto producer_transport =
      bus::test::connect_transport(restart_settings("restart producer", producer_log));
  handler_record record;
  std::optional<bus::endpoint_stats> stats;
  std::vector<std::string> confirmed, refused;
  std::set<std::string> awaiting_at_restart;
  {
    caf::actor_system_config cfg;
    // Two handlers block their threads while the broker is down, and the
    // scheduler blocks in send_delayed until it is back: enough threads
    // that the rest keeps going.
    cfg.set("scheduler.max-threads", 4);
    caf::actor_system sys{cfg};
    auto quiet = std::vector<std::shared_ptr<spdlog::sinks::sink>>{
        std::make_shared<spdlog::sinks::null_sink_mt>()};

    bus::bus_builder consuming{sys};
    consuming.name("restart-consumer")
        .transport(consumer_transport)
        .log_sinks(quiet)
        .message<restart_probe>(type)
        .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1s}).jitter(false); })
        .endpoint(endpoint, [&](bus::endpoint_builder& e) {
          e.slots(slots).handle<restart_probe>(
              [&](const restart_probe& m, bus::handler_context& ctx) {
                if (m.held)
                  record.hold(m.id);
                if (m.fails_first && ctx.delivery_count() == 0) {
                  record.failed_first(m.id);
                  throw std::runtime_error("fails on its first delivery");
                }
                record.handled(m.id);
              });
        });
    auto consumer_bus = consuming.build();
    REQUIRE(consumer_bus);
    REQUIRE((*consumer_bus)->start());

    bus::bus_builder producing{sys};
    producing.name("restart-producer")
        .transport(producer_transport)
        .log_sinks(quiet)
        .message<restart_probe>(type);
    auto producer_bus = producing.build();
    REQUIRE(producer_bus);
    REQUIRE((*producer_bus)->start());

    // Two messages in the middle of their handler when the broker goes down.
    REQUIRE((*producer_bus)->send(endpoint, restart_probe{"held-0", false, true}));
    REQUIRE((*producer_bus)->send(endpoint, restart_probe{"held-1", false, true}));
    REQUIRE(record.wait_until_holding(2));

    producer sender(**producer_bus, endpoint);
    REQUIRE(record.wait_for_total(100)); // messages flow, redeliveries wait in the levels
    awaiting_at_restart = record.awaiting_redelivery();
    auto restart = bus::test::broker_env("BUS_RABBITMQ_RESTART") + " >/dev/null 2>&1";
    REQUIRE(std::system(restart.c_str()) == 0);
    auto sent_before_back = sender.confirmed_count();

    // Both transports come back by themselves: each has two connections.
    CHECK(bus::test::eventually(
        [&] {
          return consumer_transport->reconnects() >= 2 && producer_transport->reconnects() >= 2;
        },
        60s));
    record.release();
    REQUIRE(bus::test::eventually(
        [&] { return sender.confirmed_count() >= sent_before_back + 100; }, 60s));
    sender.stop();
    confirmed = sender.confirmed();
    refused = sender.refused();

    // Every confirmed message handled, and the held ones twice: their first
    // attempt ended after the connection it came over was gone, so its
    // acknowledgement could not be sent, and the broker delivered them again.
    bool all_handled = bus::test::eventually(
        [&] {
          auto handled = record.handled();
          return std::all_of(confirmed.begin(), confirmed.end(),
                             [&](const std::string& id) { return handled.count(id) > 0; })
                 && handled["held-0"] >= 2 && handled["held-1"] >= 2;
        },
        60s, 50ms);
    (*consumer_bus)->stop();
    (*producer_bus)->stop();
    stats = (*consumer_bus)->stats(endpoint);
    CHECK(all_handled);
  }

  auto handled = record.handled();
  INFO(confirmed.size() << " messages confirmed, " << refused.size() << " refused"
                        << (refused.empty() ? "" : " (first: " + refused.front() + ")") << "; "
                        << handled.size() << " handled; " << awaiting_at_restart.size()
                        << " awaiting their redelivery at the restart");
  // Sends waited for the node to come back instead of failing.
  CHECK(refused.empty());
  // Nothing confirmed was lost, including what the delay levels held.
  std::vector<std::string> lost;
  for (const auto& id : confirmed)
    if (handled.count(id) == 0)
      lost.push_back(id);
  CHECK(lost.empty());
  CHECK_FALSE(awaiting_at_restart.empty());
  for (const auto& id : awaiting_at_restart) {
    INFO(id << " waited for its redelivery at the restart");
    CHECK(handled.count(id) > 0);
  }
  CHECK(handled["held-0"] >= 2);
  CHECK(handled["held-1"] >= 2);
  // At least once, bounded: a message is handled twice only if its
  // delivery was unacknowledged at the restart (at most the prefetch,
  // `slots`), if the producer's one send in flight lost its confirm and
  // was published again, or if the scheduling of a failed message's
  // redelivery (one send_delayed per slot at most) lost its confirm and was
  // published into the delay levels again (seen: m-733 and m-743, both
  // failing first, handled twice besides two unacknowledged at the restart).
  std::vector<std::string> twice;
  std::ostringstream counts;
  for (const auto& [id, n] : handled)
    if (n > 1) {
      twice.push_back(id);
      counts << ' ' << id << " (" << n << " times)";
    }
  INFO(twice.size() << " handled more than once:" << counts.str());
  CHECK(twice.size() <= 2 * slots + 1);

  // The endpoint's counters reconcile, with nothing left in flight.
  REQUIRE(stats.has_value());
  const auto& s = *stats;
  INFO("received " << s.received << ", handled " << s.handled << ", scheduled "
                   << s.redeliveries_scheduled << ", requeued " << s.requeued << ", in flight "
                   << s.in_flight);
  CHECK(s.received
        == s.handled + s.dead_lettered + s.discarded + s.skipped + s.requeued
               + s.redeliveries_scheduled + static_cast<std::uint64_t>(s.in_flight));
  CHECK(s.in_flight == 0);
  CHECK(s.dead_lettered == 0);
  std::uint64_t handler_returns = 0;
  for (const auto& [id, n] : handled)
    handler_returns += static_cast<std::uint64_t>(n);
  // A handler that returned after its connection died is not counted as
  // handled: its outcome is dropped unsettled (counted as requeued) and the
  // broker delivers the message again.
  CHECK(s.handled <= handler_returns);
  CHECK(handler_returns <= s.handled + s.requeued);

  // The transports saw the restart and came back, and no acknowledgement
  // of the lost connection went out on the new one, where its delivery tag
  // would name another message (RabbitMQ closes the channel for an
  // unknown tag).
  CHECK(mentions(consumer_log.lines(), "is back"));
  CHECK(mentions(producer_log.lines(), "is back"));
  CHECK_FALSE(mentions(consumer_log.lines(), "unknown delivery tag"));

  // The broker holds nothing more for the endpoint: its queue and the
  // delay levels are empty (the consumer is gone, so nothing is unacked).
  consumer_transport.reset();
  producer_transport.reset();
  auto reader = bus::test::connect_transport();
  CHECK(reader->message_count(endpoint).value() == 0);
  auto settings = bus::test::test_settings();
  bus::detail::delay_levels levels(settings.delay_levels, settings.delay_unit);
  for (unsigned k = 0; k < levels.count(); ++k) {
    INFO("delay level " << levels.level_name(k));
    CHECK(reader->message_count(levels.level_name(k)).value() == 0);
  }
}
