// A dependency breaker shared across threads: the pure state machine
// (bus/dependency_breaker.hpp) behind a mutex, and the endpoints that
// depend on it. Consumers run on threads of their own and record failures
// here directly; endpoint actors record successes and take probes. Every
// change of state is told to each subscribed endpoint as a message
// (dependency_atom), so that they pause and resume at once, without
// polling per message.
//
// Thread-safety: every member may be called from any thread. Listeners are
// told after the lock is released; a listener re-reads the state, so the
// order in which notices arrive does not matter.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "bus/dependency_breaker.hpp"

namespace bus::detail {

// One change of a breaker's state, for people (the bus's page).
struct breaker_change {
  breaker_state to = breaker_state::closed;
  time_point at{};
};

class dependency_gate {
public:
  dependency_gate(std::string name, dependency_breaker_settings settings);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] breaker_state state(time_point now) const;
  // Whether it is closed, without the lock: the check on the success path.
  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  [[nodiscard]] time_point open_until() const;
  [[nodiscard]] dependency_breaker_settings settings() const;
  // Its last changes of state, oldest first (at most recent_limit).
  [[nodiscard]] std::vector<breaker_change> recent_changes() const;
  static constexpr std::size_t recent_limit = 8;

  // A success of an attempt that needed the dependency.
  void record_success(time_point now, bool probe);
  // A failure counted against the dependency. Returns whether the breaker
  // is not closed afterwards: the message must then go back unharmed.
  [[nodiscard]] bool record_failure(time_point now, bool probe);
  // Takes the single probe of a half-open breaker.
  [[nodiscard]] bool try_probe(time_point now);
  // Gives a probe back without a verdict; `tell` lets the listeners try
  // again (false when an endpoint only rolls back its own attempt).
  void release_probe(bool tell);

  void subscribe(const caf::actor& endpoint);
  void unsubscribe(const caf::actor_addr& endpoint);

private:
  void tell_listeners();
  void remember(dependency_breaker::transition t, time_point now); // mutex_ held

  const std::string name_;
  mutable std::mutex mutex_;
  dependency_breaker breaker_;        // guarded by mutex_
  std::vector<caf::actor> listeners_; // guarded by mutex_
  std::deque<breaker_change> changes_; // guarded by mutex_
  std::atomic<bool> closed_{true};    // breaker_.closed(), written under mutex_
};

using gate_ptr = std::shared_ptr<dependency_gate>;

// Every dependency declared on a bus, by name.
using dependency_gates = std::map<std::string, gate_ptr, std::less<>>;

} // namespace bus::detail
