// A TCP relay between a client (a transport, a store) and the test's
// server (a broker on a loopback port, a database on a Unix socket), which
// a test can pause (bytes stop flowing both ways, the connections stay
// open: a silent peer, as a failover, a partition or a hung proxy leaves
// one) and cut (every connection closed and no new one taken: a server
// out of reach). A test may also edit what the server sends
// (amqp_confirm_edit.hpp: the confirms of a failover or a refusal). The
// server itself is never touched, so the tests that run beside it on the
// shared node see nothing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace bus::test {

class tcp_relay {
public:
  // What the broker sends on one connection, in the chunks it arrives in,
  // to what the client gets instead.
  using edit = std::function<std::string(std::string_view)>;
  // Makes a fresh edit for each relayed connection.
  using edit_factory = std::function<edit()>;

  // Listens on a free local port and relays each connection to
  // 127.0.0.1:`upstream_port`, passing what the server sends through an
  // edit from `downstream` if there is one.
  explicit tcp_relay(std::uint16_t upstream_port, edit_factory downstream = {})
    : tcp_relay([upstream_port] { return connect_tcp(upstream_port); }, std::move(downstream)) {}
  // The same, to the Unix socket at `upstream_path` (PostgreSQL's
  // <dir>/.s.PGSQL.<port>).
  struct unix_socket {
    std::string path;
  };
  explicit tcp_relay(unix_socket upstream)
    : tcp_relay([path = std::move(upstream.path)] { return connect_unix(path); }, {}) {}

private:
  // Opens a connection to the server: a connected socket, or -1.
  using connector = std::function<int()>;

  tcp_relay(connector upstream, edit_factory downstream)
    : upstream_(std::move(upstream)), downstream_(std::move(downstream)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listener_ >= 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr = loopback(0);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener_, 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    REQUIRE(wake_ >= 0);
    thread_ = std::thread([this] { run(); });
  }

public:
  ~tcp_relay() {
    state_ = state::stopping;
    poke();
    thread_.join();
    for (auto& p : pairs_)
      close_pair(p);
    if (listener_ >= 0)
      ::close(listener_);
    ::close(wake_);
  }

  tcp_relay(const tcp_relay&) = delete;
  tcp_relay& operator=(const tcp_relay&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

  // Bytes stop flowing (they wait in the kernel's buffers); resume() lets
  // them go on, nothing lost.
  void pause() { set(state::paused); }
  void resume() { set(state::running); }
  // Closes every relayed connection and the listener: connecting again is
  // refused. Returns once done.
  void cut() { set(state::cut); }
  // Closes every relayed connection (what they had in flight is lost) and
  // goes on relaying new ones: a connection lost, a broker still there.
  void drop() {
    drop_ = true;
    set(state::running);
  }

private:
  enum class state { running, paused, cut, stopping };
  struct pair {
    int client = -1;
    int upstream = -1;
    edit downstream; // empty: the broker's bytes pass as they are
  };

  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    return addr;
  }

  static int connect_tcp(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback(port);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      return fd;
    if (fd >= 0)
      ::close(fd);
    return -1;
  }

  static int connect_unix(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd < 0 || path.size() >= sizeof addr.sun_path) {
      if (fd >= 0)
        ::close(fd);
      return -1;
    }
    path.copy(addr.sun_path, path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      return fd;
    ::close(fd);
    return -1;
  }

  static void close_pair(pair& p) {
    if (p.client >= 0)
      ::close(p.client);
    if (p.upstream >= 0)
      ::close(p.upstream);
    p.client = p.upstream = -1;
  }

  void poke() {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
  }

  // Changes the state and waits until the relay thread has acted on it.
  void set(state s) {
    state_ = s;
    auto generation = ++requested_;
    poke();
    while (acted_.load() < generation)
      std::this_thread::yield();
  }

  // Copies what `from` has to `to`, through `change` if it is set; false
  // when either side is closed.
  static bool forward(int from, int to, const edit& change = {}) {
    char buffer[65536];
    auto n = ::recv(from, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return false;
    if (n < 0)
      return true;
    std::string changed;
    std::string_view out(buffer, static_cast<std::size_t>(n));
    if (change) {
      changed = change(out);
      out = changed;
    }
    for (std::size_t sent = 0; sent < out.size();) {
      auto m = ::send(to, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (m < 0)
        return false;
      sent += static_cast<std::size_t>(m);
    }
    return true;
  }

  void run() {
    for (;;) {
      // Read before the state: a set() whose generation this sees has
      // stored its state already.
      auto generation = requested_.load();
      auto s = state_.load();
      if (s == state::stopping)
        return;
      if (drop_.exchange(false)) {
        for (auto& p : pairs_)
          close_pair(p);
        pairs_.clear();
      }
      if (s == state::cut) {
        for (auto& p : pairs_)
          close_pair(p);
        pairs_.clear();
        if (listener_ >= 0)
          ::close(listener_);
        listener_ = -1;
      }
      std::vector<pollfd> fds{{wake_, POLLIN, 0}};
      if (listener_ >= 0)
        fds.push_back({listener_, POLLIN, 0});
      if (s == state::running)
        for (const auto& p : pairs_) {
          fds.push_back({p.client, POLLIN, 0});
          fds.push_back({p.upstream, POLLIN, 0});
        }
      // Only the pairs polled now are read below; one accepted in this
      // round has no entry in `fds` and waits for the next.
      auto polled = s == state::running ? pairs_.size() : 0;
      acted_ = generation; // the state read above is in force from here on
      ::poll(fds.data(), fds.size(), 1000);
      if (fds[0].revents) {
        std::uint64_t value = 0;
        [[maybe_unused]] auto n = ::read(wake_, &value, sizeof value);
      }
      if (listener_ >= 0 && fds[1].revents && state_ == s) {
        pair p;
        p.client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        p.upstream = p.client >= 0 ? upstream_() : -1;
        if (p.client >= 0 && p.upstream >= 0) {
          if (downstream_)
            p.downstream = downstream_();
          pairs_.push_back(p);
        }
        else
          close_pair(p);
      }
      if (s != state::running || state_ != s)
        continue;
      std::size_t first = listener_ >= 0 ? 2 : 1;
      std::vector<pair> kept;
      for (std::size_t i = 0; i < pairs_.size(); ++i) {
        auto& p = pairs_[i];
        if (i >= polled) {
          kept.push_back(std::move(p));
          continue;
        }
        bool ok = true;
        if (fds[first + 2 * i].revents)
          ok = forward(p.client, p.upstream);
        if (ok && fds[first + 2 * i + 1].revents)
          ok = forward(p.upstream, p.client, p.downstream);
        if (ok)
          kept.push_back(std::move(p));
        else
          close_pair(p);
      }
      pairs_ = std::move(kept);
    }
  }

  connector upstream_;
  edit_factory downstream_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  int wake_ = -1;
  std::atomic<state> state_{state::running};
  std::atomic<bool> drop_{false};
  std::atomic<std::uint64_t> requested_{0}; // generations of set()
  std::atomic<std::uint64_t> acted_{0};     // the last one the relay thread acts on
  std::vector<pair> pairs_; // relay thread only (and the destructor, after it)
  std::thread thread_;
};

} // namespace bus::test
