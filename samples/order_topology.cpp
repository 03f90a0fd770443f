// The sample order topology, what `./bus.sh demo` runs, in two scenes on
// the wall clock.
//
// 1. Orders: an order service takes place_order commands and publishes
//    order_placed; billing and shipping consume it with a few slots each.
//    Billing's payment gateway times out now and then (recovered by an
//    immediate retry) and declines cards over a limit (the error queue).
//    Shipping's carrier is down for the first moments (recovered by a
//    redelivery).
// 2. Outage: the inventory endpoint's database goes down for a while; the
//    endpoint is rate limited during it and back at full speed after.
//
// Prints a summary of what each endpoint did.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>

#include <caf/all.hpp>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "order_messages.hpp"

using namespace std::chrono_literals;
using namespace samples;

namespace samples {

class card_declined : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};
class gateway_timeout : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};
class carrier_unavailable : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};
class database_down : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace samples

namespace {

constexpr int order_count = 300;
constexpr double card_limit = 950;

using steady = std::chrono::steady_clock;

// What the event stream says happened, counted per endpoint.
struct tally {
  std::atomic<int> by_retry{0};      // handled after failing in the same delivery
  std::atomic<int> by_redelivery{0}; // handled on a redelivery
  std::atomic<int> rate_limit_started{0};
  std::atomic<int> rate_limit_ended{0};
};

class scoreboard {
public:
  tally& of(const std::string& endpoint) {
    std::lock_guard<std::mutex> guard(mutex_);
    return tallies_[endpoint];
  }

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      auto& t = of(e.endpoint);
      if (e.kind == bus::event_kind::handled && e.delivery_count > 0)
        ++t.by_redelivery;
      else if (e.kind == bus::event_kind::handled && e.attempt > 1)
        ++t.by_retry;
      else if (e.kind == bus::event_kind::rate_limit_started)
        ++t.rate_limit_started;
      else if (e.kind == bus::event_kind::rate_limit_ended)
        ++t.rate_limit_ended;
      changed_.notify_all();
    };
  }

  // Waits until `done` holds or the deadline passes, waking on every event
  // (and every 20 ms, for what no event announces).
  template <class Done>
  bool wait(Done done, steady::duration deadline) {
    auto until = steady::now() + deadline;
    std::unique_lock<std::mutex> lock(wait_mutex_);
    while (!done()) {
      if (steady::now() >= until)
        return false;
      changed_.wait_for(lock, 20ms);
    }
    return true;
  }

private:
  std::mutex mutex_;
  std::map<std::string, tally> tallies_;
  std::mutex wait_mutex_;
  std::condition_variable changed_;
};

void print_summary(const bus::message_bus& b, bus::in_memory_transport& t, scoreboard& score) {
  std::printf("\n%-10s %8s %8s %8s %9s %9s %8s %11s\n", "endpoint", "received", "handled",
              "failed", "by retry", "by redeliv", "to error", "rate limit");
  for (const auto& name : b.endpoint_names()) {
    auto s = *b.stats(name);
    auto& tl = score.of(name);
    char limit[32] = "-";
    if (tl.rate_limit_started > 0)
      std::snprintf(limit, sizeof(limit), "%d on/%d off", tl.rate_limit_started.load(),
                    tl.rate_limit_ended.load());
    std::printf("%-10s %8llu %8llu %8llu %9d %9d %8llu %11s\n", name.c_str(),
                static_cast<unsigned long long>(s.received),
                static_cast<unsigned long long>(s.handled),
                static_cast<unsigned long long>(s.failed_attempts), tl.by_retry.load(),
                tl.by_redelivery.load(), static_cast<unsigned long long>(s.dead_lettered), limit);
  }
  auto errors = t.browse("billing_error");
  std::printf("\nbilling_error holds %zu messages", errors.size());
  if (!errors.empty())
    std::printf(", e.g. %s: %s", errors.front()->message_id.c_str(),
                std::string(*errors.front()->headers.find("bus-fault-message")).c_str());
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << caf::actor_system_config::render(err) << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  scoreboard score;
  std::atomic<int> gateway_calls{0};
  auto carrier_back_at = steady::now() + 300ms;
  std::atomic<steady::rep> database_back_at{0}; // steady ticks; down until then

  bus::bus_builder builder{sys};
  builder.name("order-service-client")
    .transport(transport)
    .observe(score.observer())
    .message<place_order>("place_order")
    .message<order_placed>("order_placed")
    // Every endpoint without rules of its own: what cannot be fixed goes to
    // the error queue at once; anything else is retried, then redelivered.
    .add_resilience([](bus::policy_builder& p) {
      p.on<card_declined>().dead_letter();
      p.on<gateway_timeout>().retry(3, 20ms);
      p.on_any().retry(2, 10ms).then_redeliver({500ms, 1s});
    })
    .endpoint("orders", [](bus::endpoint_builder& e) {
      e.slots(2).handle<place_order>([](const place_order& cmd, bus::handler_context& ctx) {
        if (cmd.amount <= 0)
          throw std::invalid_argument("order " + cmd.order_id + " has no amount");
        // Released only if this handler completes: never an event for an
        // order that failed.
        if (auto staged = ctx.publish(order_placed{cmd.order_id, cmd.customer, cmd.amount}); !staged)
          throw std::runtime_error(to_string(staged.error()));
      });
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(3).handle<order_placed>([&](const order_placed& evt) {
        if (evt.amount > card_limit)
          throw card_declined("card of " + evt.customer + " declined for "
                              + std::to_string(static_cast<int>(evt.amount)));
        if (++gateway_calls % 25 == 0)
          throw gateway_timeout("payment gateway timed out");
      });
    })
    .endpoint("shipping", [&](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&](const order_placed&) {
        if (steady::now() < carrier_back_at)
          throw carrier_unavailable("carrier API unavailable");
      });
    })
    .endpoint("inventory", [&](bus::endpoint_builder& e) {
      e.slots(4)
        .rate_limit(5, 100ms)
        .add_resilience([](bus::policy_builder& p) {
          p.on_any().retry(1, 10ms).then_redeliver({1s});
        })
        .handle<place_order>([&](const place_order&) {
          if (steady::now().time_since_epoch().count() < database_back_at.load())
            throw database_down("inventory database unavailable");
        });
    });

  auto built = builder.build();
  if (!built) {
    std::cerr << "bad configuration:\n" << built.error().message << "\n";
    return 2;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::cerr << "cannot start: " << to_string(started.error()) << "\n";
    return 1;
  }

  // Scene 1: orders.
  std::printf("scene 1: %d orders; the payment gateway is flaky, the carrier is down at first\n",
              order_count);
  auto began = steady::now();
  for (int i = 0; i < order_count; ++i) {
    auto amount = 10.0 + (i * 37) % 1000; // a few exceed the card limit
    auto sent = bus.send("orders", place_order{"order-" + std::to_string(i),
                                               "customer-" + std::to_string(i % 17), amount});
    if (!sent) {
      std::cerr << "cannot send: " << to_string(sent.error()) << "\n";
      return 1;
    }
  }
  auto ended = [&](const char* endpoint) {
    auto s = *bus.stats(endpoint);
    return s.handled + s.dead_lettered + s.discarded;
  };
  bool settled = score.wait(
    [&] { return ended("billing") == order_count && ended("shipping") == order_count; }, 8s);

  // Scene 2: an outage of the inventory database.
  std::printf("scene 2: the inventory database goes down while 200 orders arrive\n");
  database_back_at = (steady::now() + 700ms).time_since_epoch().count();
  for (int i = 0; i < 200; ++i)
    (void)bus.send("inventory", place_order{"stock-" + std::to_string(i), "warehouse", 1});
  settled = settled && score.wait(
    [&] { return ended("inventory") == 200 && score.of("inventory").rate_limit_ended > 0; }, 6s);
  auto elapsed = std::chrono::duration<double>(steady::now() - began);
  bus.stop();

  std::printf("\ntopology %s in %.2f s\n", settled ? "settled" : "did NOT settle (deadline passed)",
              elapsed.count());
  print_summary(bus, *transport, score);
  return settled ? 0 : 1;
}
