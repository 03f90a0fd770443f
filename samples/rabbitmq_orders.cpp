// The order topology as separate processes on one RabbitMQ broker, one
// role each (run two billing processes to see them compete for its queue):
//
//   BUS_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5672/ rabbitmq_orders billing
//   BUS_RABBITMQ_URL=...                                 rabbitmq_orders shipping
//   BUS_RABBITMQ_URL=...                                 rabbitmq_orders orders 200
//
// billing and shipping handle order_placed until SIGINT or SIGTERM, then
// print how many they handled. orders sends place_order commands to its
// own queue, publishes order_placed for each, and exits once all are done.
// scripts/rabbitmq-demo.sh runs the whole topology (./bus.sh demo --rabbitmq).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>

#include <caf/all.hpp>
#include <unistd.h>

#include "bus/bus.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "order_messages.hpp"

using namespace samples;

namespace {

int usage() {
  std::cerr << "usage: rabbitmq_orders billing|shipping|orders [COUNT]  (BUS_RABBITMQ_URL names the broker)\n";
  return 2;
}

// Blocks until SIGINT or SIGTERM arrives.
void wait_for_stop_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return usage();
  std::string role = argv[1];
  if (role != "billing" && role != "shipping" && role != "orders")
    return usage();
  int count = argc > 2 ? std::atoi(argv[2]) : 100;
  // Signals are taken by sigwait, in the main thread only.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto settings = bus::rabbitmq_settings_from_env();
  if (!settings) {
    std::cerr << role << ": " << to_string(settings.error()) << "\n";
    return 2;
  }
  settings->connection_name = "orders-sample-" + role + "-" + std::to_string(::getpid());
  auto transport = bus::rabbitmq_transport::connect(*settings);
  if (!transport) {
    std::cerr << role << ": " << to_string(transport.error()) << "\n";
    return 1;
  }

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<int> handled{0};
  auto count_one = [&] {
    ++handled;
    changed.notify_all();
  };

  bus::bus_builder b{sys};
  b.name(role).transport(*transport).message<place_order>("place_order").message<order_placed>("order_placed");
  b.add_resilience([](bus::policy_builder& p) { p.on_any().retry(2).then_redeliver({std::chrono::seconds(1)}); });
  if (role == "orders") {
    b.endpoint("orders", [&](bus::endpoint_builder& e) {
      e.slots(4).handle<place_order>([&](const place_order& cmd, bus::handler_context& ctx) {
        if (auto staged = ctx.publish(order_placed{cmd.order_id, cmd.customer, cmd.amount}); !staged)
          throw std::runtime_error(to_string(staged.error()));
        count_one();
      });
    });
  } else {
    b.endpoint(role, [&](bus::endpoint_builder& e) {
      e.slots(4).handle<order_placed>([&](const order_placed&) { count_one(); });
    });
  }
  auto built = b.build();
  if (!built) {
    std::cerr << role << ": " << built.error().message << "\n";
    return 2;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::cerr << role << ": " << to_string(started.error()) << "\n";
    return 1;
  }
  std::printf("%s %d ready\n", role.c_str(), static_cast<int>(::getpid()));
  std::fflush(stdout);

  bool complete = true;
  if (role == "orders") {
    for (int i = 0; i < count; ++i)
      if (auto sent = bus.send("orders", place_order{"order-" + std::to_string(i), "c", 10.0 + i}); !sent) {
        std::cerr << "orders: " << to_string(sent.error()) << "\n";
        return 1;
      }
    std::unique_lock<std::mutex> lock(mutex);
    complete = changed.wait_for(lock, std::chrono::seconds(60), [&] { return handled >= count; });
  } else {
    wait_for_stop_signal();
  }
  bus.stop();
  std::printf("%s %d handled %d\n", role.c_str(), static_cast<int>(::getpid()), handled.load());
  return complete ? 0 : 1;
}
