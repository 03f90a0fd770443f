// A message store that times the outbox from the outside: it wraps the
// real one (the port is a pure interface, so the bus needs no hook for
// it) and records, per message id, when its transaction's commit returned
// and when the bus called mark_dispatched() for it, i.e. once its sends
// were out. The difference is the commit-to-dispatch latency. It also
// counts the marks, which is when a delivery's work is done, and times
// each message from the start of its receive() to the return of its mark:
// the part of a delivery spent on the database (with the handler and the
// dispatch between), against which the rest is the runtime's own.
//
// Thread-safe: the consumers' threads commit and mark concurrently.
#pragma once

#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "bus/forwarding_store.hpp"
#include "measure.hpp"

namespace bench {

class timing_store final : public bus::forwarding_store {
public:
  // `marked` is completed after each successful mark.
  timing_store(std::shared_ptr<bus::message_store> inner, completion& marked)
      : forwarding_store(std::move(inner)), marked_(marked) {}

  bus::result<bus::inbox_entry> receive(const bus::inbox_key& key, bus::time_point now) override {
    auto at = now_ns();
    {
      std::lock_guard<std::mutex> guard(mutex_);
      received_[key.message_id] = at;
    }
    auto entry = inner().receive(key, now);
    add(call_ns_[0], now_ns() - at);
    if (entry && entry->transaction)
      entry->transaction =
          std::make_unique<timed_transaction>(std::move(entry->transaction), *this, key.message_id);
    return entry;
  }

  bus::result<void> mark_dispatched(const bus::inbox_key& key, bus::time_point now) override {
    auto at = now_ns(); // before the mark's own statement: it is not dispatch time
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (auto it = committed_.find(key.message_id); it != committed_.end()) {
        latencies_us_.push_back(static_cast<double>(at - it->second) / 1000.0);
        committed_.erase(it);
      }
    }
    auto marked = inner().mark_dispatched(key, now);
    add(call_ns_[2], now_ns() - at);
    if (marked) {
      auto end = now_ns();
      {
        std::lock_guard<std::mutex> guard(mutex_);
        if (auto it = received_.find(key.message_id); it != received_.end()) {
          in_store_us_.push_back(static_cast<double>(end - it->second) / 1000.0);
          received_.erase(it);
        }
      }
      marked_.complete();
    }
    return marked;
  }

  // Commit-to-mark of every message marked so far, in microseconds.
  [[nodiscard]] std::vector<double> latencies_us() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return latencies_us_;
  }

  // The transaction the bus gives the handler: the real one inside
  // (inner()), whose connection the handler writes through.
  class timed_transaction final : public bus::store_transaction {
  public:
    timed_transaction(std::unique_ptr<bus::store_transaction> inner, timing_store& owner,
                      std::string message_id)
        : inner_(std::move(inner)), owner_(owner), message_id_(std::move(message_id)) {}

    bus::result<void> commit(const std::vector<std::string>& outgoing) override {
      auto start = now_ns();
      auto done = inner_->commit(outgoing);
      owner_.add(owner_.call_ns_[1], now_ns() - start);
      if (done) {
        auto at = now_ns();
        std::lock_guard<std::mutex> guard(owner_.mutex_);
        owner_.committed_[message_id_] = at;
      }
      return done;
    }
    void rollback() noexcept override { inner_->rollback(); }

    // The handler reaches the real transaction's connection through this.
    [[nodiscard]] bus::store_transaction& inner() const noexcept { return *inner_; }

  private:
    std::unique_ptr<bus::store_transaction> inner_;
    timing_store& owner_;
    std::string message_id_;
  };

  // The mean time of receive(), commit() and mark_dispatched() calls so
  // far, in microseconds: where a slow delivery spends its database time.
  [[nodiscard]] std::array<double, 3> call_means_us() const {
    std::array<double, 3> out{};
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto calls = call_ns_[i].calls.load();
      out[i] =
          calls ? static_cast<double>(call_ns_[i].ns.load()) / 1000.0 / static_cast<double>(calls)
                : 0.0;
    }
    return out;
  }

  // Receive to marked of every message marked so far, in microseconds.
  [[nodiscard]] std::vector<double> in_store_us() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return in_store_us_;
  }

private:
  completion& marked_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::int64_t> committed_; // message id -> commit returned
  std::vector<double> latencies_us_;
  std::unordered_map<std::string, std::int64_t> received_; // message id -> receive called
  std::vector<double> in_store_us_;
  struct call_time {
    std::atomic<std::int64_t> ns{0};
    std::atomic<std::int64_t> calls{0};
  };
  static void add(call_time& t, std::int64_t ns) {
    t.ns += ns;
    ++t.calls;
  }
  std::array<call_time, 3> call_ns_; // receive, commit, mark
};

} // namespace bench
