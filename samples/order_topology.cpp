// The sample order topology, what `./bus.sh demo` runs: an order service
// takes place_order commands and publishes order_placed; billing and
// shipping consume it with a few slots each. Billing declines cards over a
// limit, so some messages end on billing's error queue. Prints a summary
// of what each endpoint did.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <stdexcept>

#include <caf/all.hpp>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "order_messages.hpp"

using namespace samples;

namespace samples {

class card_declined : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace samples

namespace {

constexpr int order_count = 300;
constexpr double card_limit = 950;

// Waits for the topology to settle: until `done` says so, or the deadline.
// Checked on every change the handlers signal, and every 20 ms for what
// the handlers cannot signal (a message parked on an error queue).
class settle_watch {
public:
  void changed() { cv_.notify_all(); }
  template <class Done>
  bool wait(Done done, std::chrono::seconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done()) {
      if (cv_.wait_until(lock, std::min(until, std::chrono::steady_clock::now()
                                                 + std::chrono::milliseconds(20)))
            == std::cv_status::timeout
          && std::chrono::steady_clock::now() >= until)
        return done();
    }
    return true;
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
};

void print_summary(const bus::message_bus& b, bus::in_memory_transport& t) {
  std::printf("\n%-10s %8s %8s %8s %8s %8s %8s\n", "endpoint", "received", "handled", "failed",
              "to error", "skipped", "queued");
  for (const auto& name : b.endpoint_names()) {
    auto s = *b.stats(name);
    std::printf("%-10s %8llu %8llu %8llu %8llu %8llu %8zu\n", name.c_str(),
                static_cast<unsigned long long>(s.received),
                static_cast<unsigned long long>(s.handled),
                static_cast<unsigned long long>(s.failed_attempts),
                static_cast<unsigned long long>(s.dead_lettered),
                static_cast<unsigned long long>(s.skipped), t.depth(name));
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
  settle_watch watch;
  std::atomic<int> billed{0}, shipped{0};

  bus::bus_builder builder{sys};
  builder.name("order-service-client")
    .transport(transport)
    .message<place_order>("place_order")
    .message<order_placed>("order_placed")
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
        ++billed;
        watch.changed();
      });
    })
    .endpoint("shipping", [&](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&](const order_placed&) {
        ++shipped;
        watch.changed();
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

  auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < order_count; ++i) {
    auto amount = 10.0 + (i * 37) % 1000; // a few exceed the card limit
    auto sent = bus.send("orders", place_order{"order-" + std::to_string(i),
                                               "customer-" + std::to_string(i % 17), amount});
    if (!sent) {
      std::cerr << "cannot send: " << to_string(sent.error()) << "\n";
      return 1;
    }
  }

  auto settled = watch.wait(
    [&] {
      auto billing = *bus.stats("billing");
      return shipped.load() == order_count
             && billing.handled + billing.dead_lettered == static_cast<unsigned>(order_count);
    },
    std::chrono::seconds(10));
  auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began);
  bus.stop();

  std::printf("\nsent %d place_order commands; topology settled %s in %.1f ms\n", order_count,
              settled ? "" : "(NOT: deadline passed)", elapsed.count());
  print_summary(bus, *transport);
  return settled ? 0 : 1;
}
