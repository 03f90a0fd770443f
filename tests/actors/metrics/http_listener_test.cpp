// The bus's HTTP listener and peers that connect and say nothing (a slow
// client, a scanner, a browser's preconnect): they must not stall the
// health probes an orchestrator restarts a process by. civetweb serves a
// connection per thread, so a silent peer holds a thread until the
// listener's request timeout (bus/http_listener.hpp).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "scrape.hpp"
#include "support/real_threads_bus.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

// A TCP connection to "127.0.0.1:port" that sends nothing; closed with it.
class silent_peer {
public:
  explicit silent_peer(const std::string& address) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~silent_peer() { ::close(fd_); }
  silent_peer(const silent_peer&) = delete;
  silent_peer& operator=(const silent_peer&) = delete;

  // Whether the listener ends the connection (closes it, or answers and
  // closes) within `limit`.
  bool ended_within(std::chrono::milliseconds limit) const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) != 1)
      return false;
    char byte;
    return ::recv(fd_, &byte, 1, MSG_DONTWAIT) >= 0;
  }

private:
  int fd_ = -1;
};

// A bus that serves metrics on a free port with `listener`.
std::unique_ptr<bus::message_bus> serving(bus::test::real_threads_bus& rig,
                                          bus::http_listener_settings listener = {}) {
  auto b = rig.builder();
  b.metrics("127.0.0.1:0", listener);
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  return rig.build(b);
}

// How long GET `path` takes to answer 200; fails the test otherwise.
steady::duration time_to_answer(const std::string& address, const std::string& path) {
  auto asked = steady::now();
  auto answer = bus::test::http_get(address, path);
  auto took = steady::now() - asked;
  REQUIRE(answer.status == 200);
  return took;
}

} // namespace

TEST_CASE("the HTTP listener, two idle sockets: /health/live answers at once while two peers "
          "that sent nothing hold connections",
          "[metrics][http]") {
  bus::test::real_threads_bus rig;
  auto bus = serving(rig);
  auto address = bus->metrics_address();
  silent_peer first(address);
  silent_peer second(address);
  // Each holds a thread for the whole request timeout (5 s by default, 30 s
  // before): the probe must not wait behind them. 2 s covers a curl start
  // under a sanitizer on a loaded machine.
  CHECK(time_to_answer(address, "/health/live") < 2s);
  CHECK(time_to_answer(address, "/metrics") < 2s);
}

TEST_CASE("the HTTP listener, every thread held by a silent peer: each is closed at the request "
          "timeout and a probe answers within it",
          "[metrics][http]") {
  bus::test::real_threads_bus rig;
  auto bus = serving(rig, {2, 300ms});
  auto address = bus->metrics_address();
  std::vector<std::unique_ptr<silent_peer>> peers;
  for (int i = 0; i < 2; ++i)
    peers.push_back(std::make_unique<silent_peer>(address));
  auto took = time_to_answer(address, "/health/live");
  CHECK(took < 300ms + 2s);
  for (auto& p : peers)
    CHECK(p->ended_within(2s));
}

TEST_CASE("metrics() refuses a listener without threads or with no request timeout", "[metrics]") {
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics("127.0.0.1:0", {0, 0ms});
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message, Catch::Contains("the HTTP listener needs at least one thread")
                                      && Catch::Contains("request timeout is 00:00:00"));
}
