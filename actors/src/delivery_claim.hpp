// Who ends a delivery when a stop's drain timeout passes while a consumer
// still works on it. Shared by the endpoint and the consumer of one
// delivery; the consumer may be blocked in a handler on a thread of its
// own, so the two decide through one atomic instead of messages:
//
// - the consumer claims the delivery before anything with an effect (the
//   outbox, the error or skipped queue, the scheduler, the settlement);
// - the endpoint, at the drain timeout, takes back a delivery nobody has
//   claimed and gives it to the transport; one being claimed is left to
//   its consumer, whose report follows within the transport's timeout.
//
// Whatever a handler does after its delivery was taken back has no effect,
// and a handler blocked in its attempt's database connection is woken:
// the endpoint calls the interrupter the consumer left here (a stop must
// not wait behind a database gone silent).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace bus::detail {

class delivery_claim {
public:
  // The consumer, before an effect; claiming again is harmless (one ending
  // may lead to another: a refused redelivery to the error queue).
  // False: taken back, drop it.
  [[nodiscard]] bool claim() noexcept {
    return move(state::working, state::claimed)
           || state_.load(std::memory_order_acquire) == state::claimed;
  }
  // The consumer, when the delivery goes on unfinished after a claim (it
  // waits to try again): a stop may take it back meanwhile.
  void release() noexcept { move(state::claimed, state::working); }
  // The endpoint, at the drain timeout. False: the consumer is ending it.
  [[nodiscard]] bool take_back() noexcept { return move(state::working, state::taken_back); }
  [[nodiscard]] bool taken_back() const noexcept {
    return state_.load(std::memory_order_acquire) == state::taken_back;
  }

  // The consumer, once an attempt holds a store transaction: what ends
  // the waits of its connection (store_transaction::interrupter).
  void hold_interrupter(std::function<void()> interrupt) {
    std::lock_guard<std::mutex> guard(mutex_);
    interrupt_ = std::move(interrupt);
  }
  // The endpoint, once it took the delivery back: ends those waits, if
  // any (a transaction that ended meanwhile makes it do nothing).
  void interrupt() {
    std::function<void()> interrupt;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      interrupt = interrupt_;
    }
    if (interrupt)
      interrupt();
  }

private:
  enum class state { working, claimed, taken_back };

  bool move(state from, state to) noexcept {
    return state_.compare_exchange_strong(from, to, std::memory_order_acq_rel);
  }

  std::atomic<state> state_{state::working};
  std::mutex mutex_;                // guards interrupt_ only, off the delivery's path
  std::function<void()> interrupt_;
};

using claim_ptr = std::shared_ptr<delivery_claim>;

} // namespace bus::detail
