// A bus for the page's browser tests (page_test.py) and for the README's
// picture of the page (scripts/doc-pictures.sh): real threads, the
// in-memory transport, failing traffic, and its HTTP listener on a free
// port. It prints "listening on <host:port>" once every message it sent
// has ended, then serves until its standard input closes.
//
//   dashboard_host [--token T] [--endpoints N] [--failed M] [--traffic 1]
//
// --endpoints N adds N quiet endpoints beside billing and refunds, and
// --failed M sends M orders that fail (spread over billing and them).
// --traffic 1 keeps orders flowing through a shipping endpoint (one in
// eight fails once and is retried), so that the page's charts move.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "support/eventually.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;

namespace shop {

struct card_declined : std::runtime_error {
  card_declined() : std::runtime_error("card declined by the issuer") {}
};

struct payments_down : std::runtime_error {
  payments_down() : std::runtime_error("payments api unreachable") {}
};

} // namespace shop

namespace {

struct options {
  std::string token;
  int endpoints = 0;
  int failed = 20;
  bool traffic = false;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--token")
      o.token = argv[i + 1];
    else if (flag == "--endpoints")
      o.endpoints = std::atoi(argv[i + 1]);
    else if (flag == "--failed")
      o.failed = std::atoi(argv[i + 1]);
    else if (flag == "--traffic")
      o.traffic = std::string(argv[i + 1]) == "1";
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  return o;
}

// Fails each message the first time it sees it, as a downstream does that
// was down when the message came and is back when an operator replays it.
class first_time_fails {
public:
  void operator()(const bus::test::order_placed& order) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (seen_.insert(order.order_id).second)
      throw shop::card_declined();
  }

private:
  std::mutex mutex_;
  std::set<std::string> seen_;
};

} // namespace

int main(int argc, char** argv) try {
  auto opt = parse(argc, argv);
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  bus::bus_builder b{system};
  b.name("shop")
    .transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .metrics("127.0.0.1:0")
    .message<bus::test::order_placed>("order_placed")
    .message<bus::test::invoice_requested>("invoice_requested");
  if (!opt.token.empty())
    b.dashboard_token(opt.token);
  bus::dependency_breaker_settings payments;
  payments.consecutive_failures = 3;
  payments.open_wait = 1h;
  b.dependency("payments", payments);
  auto fails = std::make_shared<first_time_fails>();
  std::vector<std::string> failing{"billing"};
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(4)
      .add_resilience([](bus::policy_builder& p) { p.on_any().dead_letter(); })
      .handle<bus::test::order_placed>([fails](const bus::test::order_placed& m) { (*fails)(m); });
  });
  b.endpoint("refunds", [&](bus::endpoint_builder& e) {
    e.add_resilience([](bus::policy_builder& p) { p.on<shop::payments_down>().trips("payments"); })
      .handle<bus::test::invoice_requested>(
        [](const bus::test::invoice_requested&) { throw shop::payments_down(); });
  });
  auto shipped = std::make_shared<std::atomic<int>>(0);
  b.endpoint("shipping", [&](bus::endpoint_builder& e) {
    e.slots(2)
      .add_resilience([](bus::policy_builder& p) { p.on_any().retry(2, 20ms); })
      .handle<bus::test::order_placed>([shipped](const bus::test::order_placed&) {
        if (++*shipped % 8 == 0)
          throw std::runtime_error("label printer busy");
      });
  });
  for (int i = 0; i < opt.endpoints; ++i) {
    auto name = "stock-" + std::to_string(i);
    failing.push_back(name);
    b.endpoint(name, [&](bus::endpoint_builder& e) {
      e.add_resilience([](bus::policy_builder& p) { p.on_any().dead_letter(); })
        .handle<bus::test::order_placed>(
          [fails](const bus::test::order_placed& m) { (*fails)(m); });
    });
  }
  auto built = b.build();
  if (!built) {
    std::cerr << "cannot build the bus: " << to_string(built.error()) << '\n';
    return 1;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::cerr << "cannot start the bus: " << to_string(started.error()) << '\n';
    return 1;
  }
  for (int i = 0; i < opt.failed; ++i) {
    const auto& to = failing[static_cast<std::size_t>(i) % failing.size()];
    if (!bus.send(to, bus::test::order_placed{"order-" + std::to_string(i), 10.0 + i}))
      return 1;
  }
  for (int i = 0; i < 3; ++i)
    if (!bus.send("refunds", bus::test::invoice_requested{"refund-" + std::to_string(i), {}}))
      return 1;
  auto moved = [&] {
    std::uint64_t n = 0;
    for (const auto& name : failing)
      n += bus.stats(name)->dead_lettered;
    return n;
  };
  auto ended = [&] {
    return moved() == std::uint64_t(opt.failed) && bus.stats("refunds")->dependency_paused;
  };
  if (!bus::test::eventually(ended, 60s)) {
    std::cerr << "the failing traffic did not end within a minute\n";
    return 1;
  }
  std::atomic<bool> done{false};
  std::thread traffic;
  if (opt.traffic)
    traffic = std::thread([&] {
      for (int i = 0; !done; ++i) {
        (void)bus.send("shipping", bus::test::order_placed{"ship-" + std::to_string(i), 1.0});
        // Uneven pace, so that the charts show rates that change.
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + 15 * ((i / 100) % 3)));
      }
    });
  std::cout << "listening on " << bus.metrics_address() << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  done = true;
  if (traffic.joinable())
    traffic.join();
  bus.stop();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "dashboard_host: " << e.what() << '\n';
  return 2;
}
