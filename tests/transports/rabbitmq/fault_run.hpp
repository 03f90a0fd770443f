// What the bus-level fault tests on RabbitMQ share (a broker restart, a
// node killed in a cluster): a record of what an endpoint's handler did,
// a producer that sends numbered probes until stopped, and the checks that
// end every such run: the endpoint's counters reconcile, and the delay
// levels drained.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "delay_levels.hpp"
#include "support/eventually.hpp"

namespace bus::test {

// What the endpoint's handler did, shared with the test thread.
class handler_record {
public:
  // Blocks the first attempt of message `id` until release() (or 120 s);
  // a later delivery of it goes through.
  void hold(const std::string& id) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!holding_started_.insert(id).second)
      return;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(120), [&] { return released_; });
  }
  void release() {
    std::lock_guard<std::mutex> guard(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  // An attempt of delivery `delivery` (0: the first) failed; `final`: its
  // last attempt, after which the bus moves the message to the error queue.
  void failed(const std::string& id, std::uint32_t delivery, int attempt, bool final = false) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (delivery == 0)
      failed_first_.insert(id);
    if (attempt > 1)
      ++retries_;
    if (final) {
      ++ended_;
      changed_.notify_all();
    }
  }
  void handled(const std::string& id) {
    std::lock_guard<std::mutex> guard(mutex_);
    ++handled_[id];
    ++total_;
    ++ended_;
    changed_.notify_all();
  }

  bool wait_until_holding(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30),
                             [&] { return holding_started_.size() >= n; });
  }
  bool wait_for_total(std::size_t n, std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return total_ >= n; });
  }
  // Waits until fewer than `window` of the `sent` messages are still to
  // end (handled, or failed for the last time), or `stop` is set.
  void wait_for_room(std::size_t sent, std::size_t window, const std::atomic<bool>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop && sent >= ended_ + window)
      changed_.wait_for(lock, std::chrono::milliseconds(50));
  }

  // Handler returns in all, and per message.
  std::size_t total() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return total_;
  }
  std::map<std::string, int> handled() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return handled_;
  }
  // Failed attempts after a message's first: immediate retries that ran.
  std::size_t retries() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return retries_;
  }
  // Failed on their first delivery and not handled since: their
  // redelivery waits in the broker's delay levels (or, for a message that
  // always fails, it has gone to the error queue).
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
  std::size_t ended_ = 0; // handled, or failed for the last time
  std::size_t retries_ = 0;
};

// Sends the probes make(0), make(1), ... one at a time until stopped: a
// send that returned success was confirmed by the broker. With a `pace`,
// at most `window` ahead of the endpoint (sent, not ended yet), so that a
// producer faster than the endpoint does not leave it a backlog that
// outlives the test.
template <class Probe>
class probe_producer {
public:
  probe_producer(bus::message_bus& bus, std::string endpoint, std::function<Probe(int)> make,
                 handler_record* pace = nullptr, std::size_t window = 0)
      : bus_(bus), endpoint_(std::move(endpoint)), make_(std::move(make)), pace_(pace),
        window_(window), thread_([this] { run(); }) {}
  ~probe_producer() { stop(); }
  probe_producer(const probe_producer&) = delete;
  probe_producer& operator=(const probe_producer&) = delete;

  void stop() {
    stopping_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  std::size_t confirmed_count() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return confirmed_.size();
  }
  std::vector<Probe> confirmed() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return confirmed_;
  }
  // "<id>: <error>" per send that failed.
  std::vector<std::string> refused() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return refused_;
  }

private:
  void run() {
    for (int i = 0; !stopping_; ++i) {
      if (pace_)
        pace_->wait_for_room(static_cast<std::size_t>(i), window_, stopping_);
      auto p = make_(i);
      auto sent = bus_.send(endpoint_, p);
      std::lock_guard<std::mutex> guard(mutex_);
      if (sent)
        confirmed_.push_back(p);
      else
        refused_.push_back(p.id + ": " + to_string(sent.error()));
    }
  }

  bus::message_bus& bus_;
  std::string endpoint_;
  std::function<Probe(int)> make_;
  handler_record* pace_;
  std::size_t window_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Probe> confirmed_;     // guarded
  std::vector<std::string> refused_; // guarded
  std::thread thread_;
};

inline bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

inline std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines)
    out += "  " + l + "\n";
  return out;
}

// The endpoint's counters reconcile with nothing left in flight, and with
// what the handler saw: a handler that returned after its connection died
// is not counted as handled (its outcome is dropped unsettled, counted as
// requeued, and the broker delivers the message again).
inline void check_counters_reconcile(const bus::endpoint_stats& s,
                                     const std::map<std::string, int>& handled) {
  INFO("received " << s.received << ", handled " << s.handled << ", dead-lettered "
                   << s.dead_lettered << ", scheduled " << s.redeliveries_scheduled
                   << ", requeued " << s.requeued << ", in flight " << s.in_flight);
  CHECK(s.received
        == s.handled + s.dead_lettered + s.discarded + s.skipped + s.requeued
               + s.redeliveries_scheduled + static_cast<std::uint64_t>(s.in_flight));
  CHECK(s.in_flight == 0);
  std::uint64_t handler_returns = 0;
  for (const auto& [id, n] : handled)
    handler_returns += static_cast<std::uint64_t>(n);
  CHECK(s.handled <= handler_returns);
  CHECK(handler_returns <= s.handled + s.requeued);
}

// Every delay level of the test settings (with `count` levels if not 0)
// holds nothing within `within`: not a message counted by rabbitmqctl's
// `messages`, which unlike an AMQP passive declare (`messages_ready`) also
// counts the dead letters a level has not forwarded yet, the stranded ones
// of docs/rabbitmq.md included.
inline void
check_delay_levels_drained(unsigned count = 0,
                           std::chrono::milliseconds within = std::chrono::seconds(10)) {
  auto settings = test_settings();
  bus::detail::delay_levels levels(count != 0 ? count : settings.delay_levels, settings.delay_unit);
  std::map<std::string, long> depths;
  auto drained = [&] {
    depths = queue_depths();
    for (unsigned k = 0; k < levels.count(); ++k)
      if (depths[levels.level_name(k)] != 0)
        return false;
    return true;
  };
  // Each look is a rabbitmqctl call (seconds on a loaded machine): every 500 ms.
  (void)eventually(drained, within, std::chrono::milliseconds(500));
  for (unsigned k = 0; k < levels.count(); ++k) {
    INFO("delay level " << levels.level_name(k) << " (messages, not only the ready ones)");
    CHECK(depths[levels.level_name(k)] == 0);
  }
}

} // namespace bus::test
