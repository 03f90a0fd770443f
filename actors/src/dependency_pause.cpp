#include "dependency_pause.hpp"

#include <algorithm>

#include <caf/all.hpp>

#include "delivery_claim.hpp"

namespace bus::detail::dependencies {

namespace {

// Gives back the probe this endpoint holds, on the gates it took it from
// only: another endpoint sharing a breaker may hold that one's probe.
void release_probe(endpoint* self) {
  auto& st = self->state;
  for (auto* gate : st.probe_gates)
    gate->release_probe(true); // the endpoints sharing it look again
  st.probe_gates.clear();
  st.probe_tag.reset();
}

bool holds_probe(const endpoint* self, const dependency_gate* gate) {
  const auto& taken = self->state.probe_gates;
  return std::find(taken.begin(), taken.end(), gate) != taken.end();
}

event_kind event_for(breaker_state s) {
  switch (s) {
    case breaker_state::closed: return event_kind::dependency_closed;
    case breaker_state::open: return event_kind::dependency_opened;
    case breaker_state::half_open: return event_kind::dependency_half_open;
  }
  return event_kind::dependency_opened;
}

} // namespace

void join(endpoint* self) {
  auto& st = self->state;
  const auto& deps = st.rt->dependencies();
  st.seen.assign(deps.size(), breaker_state::closed);
  auto me = caf::actor_cast<caf::actor>(self);
  for (const auto& gate : deps)
    gate->subscribe(me);
  if (!deps.empty())
    sync(self);
}

void leave(endpoint* self) {
  auto& st = self->state;
  for (const auto& gate : st.rt->dependencies())
    gate->unsubscribe(self->address());
  release_probe(self);
}

void sync(endpoint* self) {
  auto& st = self->state;
  const auto& rt = *st.rt;
  const auto& deps = rt.dependencies();
  if (deps.empty())
    return;
  auto now = rt.now();
  if (st.wake_at && *st.wake_at <= now)
    st.wake_at.reset();
  bool paused = false;
  std::optional<time_point> wake;
  std::string which;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    auto s = deps[i]->state(now);
    if (s != st.seen[i]) {
      st.seen[i] = s;
      rt.log().endpoint->warn("dependency '{}' of endpoint '{}' is {}", deps[i]->name(),
                              rt.name(), to_string(s));
      rt.emit(event_for(s), deps[i]->name());
    }
    if (s == breaker_state::closed)
      continue;
    paused = true;
    which += (which.empty() ? "'" : ", '") + deps[i]->name() + "'";
    if (s == breaker_state::open) {
      auto until = deps[i]->open_until();
      wake = wake ? std::min(*wake, until) : until;
    }
  }
  auto& c = rt.counters();
  if (paused != st.paused) {
    st.paused = paused;
    c.dependency_paused.store(paused);
    if (paused) {
      c.dependency_pauses.fetch_add(1, std::memory_order_relaxed);
      rt.log().endpoint->warn("endpoint '{}' pauses: dependency {} is down; its messages wait "
                              "on its queue",
                              rt.name(), which);
      rt.emit(event_kind::endpoint_paused, "dependency " + which + " is down");
    } else {
      rt.log().endpoint->info("endpoint '{}' resumes: its dependencies are closed again",
                              rt.name());
      rt.emit(event_kind::endpoint_resumed, "every dependency is closed");
    }
  }
  // One timer for the earliest end of a wait; a later notice that moves it
  // earlier sets another (the stale one finds nothing to do).
  if (wake && (!st.wake_at || *wake < *st.wake_at)) {
    st.wake_at = wake;
    auto delay = std::chrono::ceil<duration>(*wake - now);
    self->delayed_send(self, std::max(delay, duration::zero()), dependency_atom::value);
  }
}

bool paused_dispatch(endpoint* self) {
  auto& st = self->state;
  if (!st.paused)
    return false;
  if (st.probe_tag || st.idle.empty() || st.waiting.empty() || st.stopping)
    return true;
  if (st.limited && (!st.busy.empty() || st.pausing))
    return true;
  const auto& rt = *st.rt;
  auto now = rt.now();
  std::vector<dependency_gate*> taken;
  auto give_back = [&] {
    for (auto* gate : taken)
      gate->release_probe(false); // only this endpoint's attempt: nobody to tell
  };
  for (const auto& gate : rt.dependencies()) {
    auto s = gate->state(now);
    if (s == breaker_state::closed)
      continue;
    if (s == breaker_state::open || !gate->try_probe(now)) {
      give_back();
      return true;
    }
    taken.push_back(gate.get());
  }
  if (taken.empty())
    return true; // all closed meanwhile: the notice on its way resumes the endpoint
  auto consumer = std::move(st.idle.back());
  st.idle.pop_back();
  auto d = std::move(st.waiting.front());
  st.waiting.pop_front();
  st.probe_tag = d.tag;
  st.probe_gates = std::move(taken);
  rt.counters().probes.fetch_add(1, std::memory_order_relaxed);
  rt.log().endpoint->info("endpoint '{}' lets message {} through as the probe of its half-open "
                          "dependencies",
                          rt.name(), d.message->message_id);
  auto claim = std::make_shared<delivery_claim>();
  st.busy.emplace(consumer.address(), work_in_progress{d, claim, 1, now, st.busy.size() + 1});
  self->send(consumer, probe_atom::value, std::move(d), std::move(claim), st.limited);
  return true;
}

void ended(endpoint* self, std::uint64_t tag, outcome result) {
  auto& st = self->state;
  const auto& deps = st.rt->dependencies();
  if (deps.empty())
    return;
  bool probe = st.probe_tag && *st.probe_tag == tag;
  if (result == outcome::handled) {
    // The probe's success closes the breakers it probed; on another's
    // half-open breaker it is an ordinary success, which does not count.
    auto now = st.rt->now();
    for (const auto& gate : deps)
      gate->record_success(now, probe && holds_probe(self, gate.get()));
    if (probe) {
      st.probe_gates.clear();
      st.probe_tag.reset();
    }
    return;
  }
  // The probe failed against its dependency (held: the consumer reopened
  // the breaker already) or for another reason: either way its permits go
  // back, and the endpoints sharing them look again.
  if (probe)
    release_probe(self);
}

} // namespace bus::detail::dependencies
