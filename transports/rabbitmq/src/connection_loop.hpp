// The I/O thread of one side of the transport (the publisher, the
// consumer) and the life of its connection: connect, and on a loss back
// off and connect again, for as long as the side runs. The side (an owner)
// says what a new session needs (channels, declarations), what a lost one
// takes with it, and does its own work in turns; the loop runs the turns,
// waits between them for the socket, a wake-up or the next deadline, and
// keeps the heartbeats going (rabbitmq-c services them only inside calls).
//
// The wait before a reconnect is libbus's exponential backoff
// (bus/policy/backoff.hpp): reconnect_delay_min doubled per failed attempt,
// capped at reconnect_delay_max, with libbus's +-20% jitter so that the
// processes that lost a broker together do not come back in lockstep.
//
// Threads: start(), wake(), stop_and_join() and reconnects() may be called
// from any thread; everything else, and every call into the owner, happens
// on the loop's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "amqp_session.hpp"
#include "bus/rabbitmq_settings.hpp"
#include "log.hpp"
#include "wakeup.hpp"

namespace bus::detail {

// The wait before reconnect attempt `attempt` (1 = the first after a
// failure): reconnect_delay_min * 2^(attempt-1), at most
// reconnect_delay_max, then jittered by +-20% (so up to 1.2 times the
// maximum). The same rule for a connection and for a consumer that the
// broker stopped.
[[nodiscard]] std::chrono::milliseconds reconnect_delay(const rabbitmq_settings& settings,
                                                        int attempt, std::mt19937_64& random);

// The connect step: chooses the broker to try and opens a session to it
// (connect, log in). The one place that picks a host.
[[nodiscard]] result<std::unique_ptr<amqp_session>> open_session(const rabbitmq_settings& settings,
                                                                  const std::string& role);

class connection_loop {
public:
  using clock = std::chrono::steady_clock;

  // What a side does on its connection. Every member is called on the
  // loop's thread.
  class owner {
  public:
    // A new session is open: open channels, declare what must be declared.
    // Nothing: ready. Otherwise why not: the session is closed and the
    // attempt counts as failed.
    virtual std::optional<std::string> session_opened(amqp_session& session) = 0;
    // The session died (it is destroyed right after): forget what lived on
    // it. Returns what becomes of the side's work, for the log line.
    virtual std::string session_lost() = 0;
    // One turn of work: take what other threads handed in, do it, read the
    // socket. Calls maintain() (or drop_if_dead()) where a dead session must
    // be replaced. False ends the loop (the side is stopping).
    virtual bool turn() = 0;
    // The earliest deadline of the side's work (time_point::max(): none).
    virtual clock::time_point next_deadline() const = 0;
    // The loop ended; the session (if any) is closed after this returns.
    virtual void stopped() = 0;
    // A few words appended to "... connection to X is back".
    virtual std::string back_note() const { return {}; }

  protected:
    ~owner() = default;
  };

  // `role` completes the connection's name on the broker ("publisher");
  // `name` starts the log lines about it ("publishing connection").
  connection_loop(const rabbitmq_settings& settings, std::string role, std::string name,
                  std::shared_ptr<const rabbitmq_logger> log, owner& side);
  // stop_and_join() must have been called (the owner's state is gone next).
  ~connection_loop();
  connection_loop(const connection_loop&) = delete;
  connection_loop& operator=(const connection_loop&) = delete;

  // Starts the thread and waits for its first connection, so that a wrong
  // password or an unreachable broker is reported here.
  [[nodiscard]] result<void> start();
  // Makes the thread take a turn soon. Thread-safe, never blocks.
  void wake() noexcept { wake_.notify(); }
  // Wakes the thread and waits for it to end; the owner has made turn()
  // return false first. Must not run on the loop's thread.
  void stop_and_join();
  [[nodiscard]] bool on_loop_thread() const noexcept {
    return std::this_thread::get_id() == thread_.get_id();
  }

  // How often a lost connection came back. Thread-safe.
  [[nodiscard]] std::uint64_t reconnects() const noexcept { return reconnects_.load(); }
  // Whether its connection is up right now (false before the first one and
  // from a loss until the reconnect): for health reports. Thread-safe.
  [[nodiscard]] bool connected() const noexcept { return connected_.load(); }

  // Loop thread only, from here on.

  // The session, or null while there is none (it may be dead: check alive()).
  [[nodiscard]] amqp_session* session() const noexcept { return session_.get(); }
  // Replaces a dead session by none (session_lost(), then a backoff).
  void drop_if_dead();
  // drop_if_dead(), then a new session if none and the backoff has passed.
  void maintain();
  // The last connection failure, for errors of the work that waited on it.
  [[nodiscard]] const std::string& last_failure() const noexcept { return last_failure_; }
  void note_failure(std::string why) { last_failure_ = std::move(why); }

private:
  void run(std::promise<result<void>> first);
  bool connect();
  std::chrono::milliseconds idle_wait(clock::time_point now) const;

  const rabbitmq_settings& settings_;
  const std::string role_;
  const std::string name_;
  const std::shared_ptr<const rabbitmq_logger> log_;
  owner& owner_;
  wakeup wake_;
  std::thread thread_;
  std::atomic<std::uint64_t> reconnects_{0};
  std::atomic<bool> connected_{false};

  // Loop thread state.
  std::unique_ptr<amqp_session> session_;
  int failed_attempts_ = 0; // since the last session that opened
  clock::time_point next_attempt_{};
  std::string last_failure_;
  bool ever_connected_ = false;
  std::mt19937_64 random_{std::random_device{}()};
};

} // namespace bus::detail
