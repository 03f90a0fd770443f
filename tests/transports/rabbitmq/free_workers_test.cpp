// Nothing the bus does waits on a CAF worker (issue 22, point 3): with CAF
// at one worker and the broker's connection paused, every broker round trip
// the bus makes goes on a thread of its own, and an actor of the user's,
// on that one worker, keeps answering at once. Nor does a slow start()
// hold up what an operator reads: /metrics and /health answer throughout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "actors/metrics/scrape.hpp"
#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "support/sample_messages.hpp"
#include "support/tcp_relay.hpp"

using namespace std::chrono_literals;
using bus::test::invoice_requested;
using bus::test::order_placed;
using bus::test::tcp_relay;
using steady = std::chrono::steady_clock;

namespace {

// The test broker through `relay`, with a short operation timeout: a round
// trip the paused relay holds up fails after 2 s.
bus::rabbitmq_settings through(const tcp_relay& relay) {
  auto s = bus::test::test_settings();
  s.host = "127.0.0.1";
  s.port = relay.port();
  s.operation_timeout = 2s;
  s.log = [](bus::rabbitmq_log_level, const std::string&) {};
  return s;
}

// How long the user's actor may take to answer: 100 ms, the bound,
// in a plain build. Under a sanitizer (3 to 10 times slower, and on CI's two
// cores beside another test) 1 s: 577 ms was seen under ASan with a build
// beside it. Either tells a free worker from one the bus holds: that answer
// takes the broker's whole operation timeout, 2 s (through()), or the
// probe's own timeout, 2 s (slowest_answer()).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr auto answer_bound = 1000ms;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr auto answer_bound = 1000ms;
#else
constexpr auto answer_bound = 100ms;
#endif
#else
constexpr auto answer_bound = 100ms;
#endif

// The user's actor: answers what it is asked.
caf::behavior echo() {
  return {[](int x) { return x; }};
}

// Asks `echo` every 20 ms until `done()` or `limit`, and returns the
// slowest answer (a request with no answer in 1 s counts as 1 s).
template <class Done>
steady::duration slowest_answer(caf::actor_system& sys, const caf::actor& echo, Done done,
                                steady::duration limit) {
  caf::scoped_actor self{sys};
  steady::duration slowest{};
  auto until = steady::now() + limit;
  while (!done() && steady::now() < until) {
    auto asked = steady::now();
    // Above any bound: a probe the held worker never answers counts 2 s.
    self->request(echo, caf::duration{2s}, 7).receive([](int) {}, [](caf::error&) {});
    slowest = std::max(slowest, steady::now() - asked);
    std::this_thread::sleep_for(20ms); // the pace of the questions
  }
  return slowest;
}

// A door a callback waits at until the test opens it, telling the test
// when the callback got there.
class door {
public:
  void wait_at() {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  bool wait_for_arrival(steady::duration limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return arrived_; });
  }
  void open() {
    std::lock_guard<std::mutex> guard(mutex_);
    open_ = true;
    changed_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool arrived_ = false;
  bool open_ = false;
};

std::string in_ms(steady::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

} // namespace

TEST_CASE("on one CAF worker a user actor answers at once while an endpoint stops on a broker "
          "that does not answer") {
  tcp_relay relay(bus::test::test_settings().port);
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto user_actor = sys.spawn(echo);
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(through(relay)))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .endpoint(bus::test::unique_name("stopping"),
              [](bus::endpoint_builder& e) { e.handle<order_placed>([](const order_placed&) {}); });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());

  // The endpoint's stop cancels its consumer: a basic.cancel that the
  // paused relay holds up until the operation timeout.
  relay.pause();
  bus.request_stop();
  auto slowest = slowest_answer(sys, user_actor, [&] { return bus.stopped(); }, 4s);
  relay.resume();
  bus.stop();
  INFO("the slowest answer during the stop took " << in_ms(slowest));
  CHECK(slowest < answer_bound);
  caf::anon_send_exit(user_actor, caf::exit_reason::user_shutdown);
}

TEST_CASE("on one CAF worker a user actor answers at once while an actor sends the bus's first "
          "request to a broker that does not answer") {
  tcp_relay relay(bus::test::test_settings().port);
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto user_actor = sys.spawn(echo);
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(through(relay)))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .message<invoice_requested>(bus::test::unique_name("invoice_requested"));
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  auto pricing = bus::test::unique_name("pricing");

  // The first request declares and consumes the bus's reply queue: round
  // trips that the paused relay holds up until the operation timeout.
  relay.pause();
  std::promise<void> answered;
  auto answer = answered.get_future();
  auto requester = sys.spawn([&]() -> caf::behavior {
    return {[&](int) {
      bus.request_async<invoice_requested>(
        pricing, order_placed{"o-1", 1}, 3s,
        [&](bus::result<invoice_requested>) { answered.set_value(); });
    }};
  });
  caf::anon_send(requester, 1);
  auto slowest = slowest_answer(
    sys, user_actor,
    [&] { return answer.wait_for(0s) == std::future_status::ready; }, 2500ms);
  relay.resume();
  // Answered at last (a timeout, or a failure to reach the broker).
  REQUIRE(answer.wait_for(30s) == std::future_status::ready);
  INFO("the slowest answer during the first request took " << in_ms(slowest));
  CHECK(slowest < answer_bound);
  caf::anon_send_exit(requester, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(user_actor, caf::exit_reason::user_shutdown);
}

TEST_CASE("on one CAF worker a user actor answers at once while a rate-limit callback takes its "
          "time") {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto user_actor = sys.spawn(echo);
  door slow_callback;
  bus::bus_builder b{sys};
  b.transport(std::make_shared<bus::in_memory_transport>())
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>("order_placed")
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.rate_limit(1, 10s, [&] { slow_callback.wait_at(); })
        .handle<order_placed>([](const order_placed&) { throw std::runtime_error("down"); });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  // The failure trips the limit: the callback runs, and waits.
  REQUIRE(slow_callback.wait_for_arrival(30s));
  auto slowest = slowest_answer(sys, user_actor, [] { return false; }, 500ms);
  slow_callback.open();
  bus.stop();
  INFO("the slowest answer while the callback waited took " << in_ms(slowest));
  CHECK(slowest < answer_bound);
  caf::anon_send_exit(user_actor, caf::exit_reason::user_shutdown);
}

TEST_CASE("/metrics and /health answer at once while start() waits for a broker that does not "
          "answer") {
  tcp_relay relay(bus::test::test_settings().port);
  auto settings = through(relay);
  settings.operation_timeout = 3s;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .metrics("127.0.0.1:0")
    .endpoint(bus::test::unique_name("starting"),
              [](bus::endpoint_builder& e) { e.handle<order_placed>([](const order_placed&) {}); });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto address = bus.metrics_address();
  REQUIRE(!address.empty());

  // start() declares the endpoint's queues: round trips that the paused
  // relay holds up until the operation timeout, when start() fails.
  relay.pause();
  std::atomic<bool> start_returned{false};
  std::thread starter([&] {
    (void)bus.start();
    start_returned = true;
  });
  steady::duration slowest{};
  int during_start = 0; // scrapes that ended while start() still waited
  while (!start_returned) {
    for (const char* path : {"/metrics", "/health/live", "/health/ready"}) {
      auto asked = steady::now();
      auto answer = bus::test::http_get(address, path);
      slowest = std::max(slowest, steady::now() - asked);
      CHECK(answer.status != 0);
      if (!start_returned)
        ++during_start;
    }
  }
  starter.join();
  relay.resume();
  INFO("the slowest of " << during_start << " answers during the start took " << in_ms(slowest));
  CHECK(during_start > 0);
  CHECK(slowest < 1s);
}
