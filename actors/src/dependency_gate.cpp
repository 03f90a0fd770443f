#include "dependency_gate.hpp"

#include <algorithm>

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

dependency_gate::dependency_gate(std::string name, dependency_breaker_settings settings)
  : name_(std::move(name)), breaker_(settings) {}

breaker_state dependency_gate::state(time_point now) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return breaker_.state(now);
}

time_point dependency_gate::open_until() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return breaker_.open_until();
}

dependency_breaker_settings dependency_gate::settings() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return breaker_.settings();
}

std::vector<breaker_change> dependency_gate::recent_changes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return {changes_.begin(), changes_.end()};
}

void dependency_gate::remember(dependency_breaker::transition t, time_point now) {
  using tr = dependency_breaker::transition;
  if (t == tr::none)
    return;
  auto to = t == tr::opened        ? breaker_state::open
            : t == tr::half_opened ? breaker_state::half_open
                                   : breaker_state::closed;
  changes_.push_back({to, now});
  if (changes_.size() > recent_limit)
    changes_.pop_front();
}

void dependency_gate::record_success(time_point now, bool probe) {
  dependency_breaker::transition t;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    t = breaker_.record_success(now, probe);
    remember(t, now);
    closed_.store(breaker_.closed(), std::memory_order_release);
  }
  if (t != dependency_breaker::transition::none)
    tell_listeners();
}

bool dependency_gate::record_failure(time_point now, bool probe) {
  dependency_breaker::transition t;
  bool closed = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    t = breaker_.record_failure(now, probe);
    remember(t, now);
    closed = breaker_.closed();
    closed_.store(closed, std::memory_order_release);
  }
  if (t != dependency_breaker::transition::none)
    tell_listeners();
  return !closed;
}

bool dependency_gate::try_probe(time_point now) {
  std::lock_guard<std::mutex> guard(mutex_);
  // An open breaker whose wait is over turns half-open as its first probe
  // is taken; the pure breaker does not report that as a transition.
  bool opening_ends = !breaker_.closed() && breaker_.state(now) == breaker_state::half_open
                      && (changes_.empty() || changes_.back().to != breaker_state::half_open);
  bool taken = breaker_.try_probe(now);
  if (taken && opening_ends)
    remember(dependency_breaker::transition::half_opened, now);
  return taken;
}

void dependency_gate::release_probe(bool tell) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    breaker_.release_probe();
  }
  if (tell)
    tell_listeners();
}

void dependency_gate::subscribe(const caf::actor& endpoint) {
  std::lock_guard<std::mutex> guard(mutex_);
  listeners_.push_back(endpoint);
}

void dependency_gate::unsubscribe(const caf::actor_addr& endpoint) {
  std::lock_guard<std::mutex> guard(mutex_);
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(),
                                  [&](const caf::actor& a) { return a.address() == endpoint; }),
                   listeners_.end());
}

void dependency_gate::tell_listeners() {
  std::vector<caf::actor> to_tell;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    to_tell = listeners_;
  }
  for (const auto& listener : to_tell)
    caf::anon_send(listener, dependency_atom::value);
}

} // namespace bus::detail
