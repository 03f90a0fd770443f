#include "consumer/dependency_hold.hpp"

#include "consumer/settling.hpp"

namespace bus::detail {

namespace {

// Gives the current delivery back to the endpoint's waiting line because
// of `why`.
void hold_back(consumer* self, const std::string& why) {
  if (!claim_ending(self))
    return;
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  rt.counters().held_back.fetch_add(1, std::memory_order_relaxed);
  rt.log().endpoint->info("message {} goes back to endpoint '{}' unharmed: {}",
                          cur.item.message->message_id, rt.name(), why);
  rt.emit(event_kind::held_back, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.detail = why;
  });
  report_and_go_on(self, outcome::held);
}

} // namespace

bool held_before_attempt(consumer* self) {
  const auto& rt = *self->state.rt;
  if (rt.dependencies().empty() || self->state.current->probe || rt.dependencies_closed())
    return false;
  hold_back(self, "a dependency breaker of the endpoint is open; not attempted");
  return true;
}

bool held_for_dependency(consumer* self) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  if (rt.dependencies().empty())
    return false;
  const auto& config = *cur.handler->recoverability;
  if (config.options.unrecoverable.find(cur.last_exception))
    return false;
  auto matched = config.rules.match(cur.last_exception);
  if (!matched.rule)
    return false;
  const auto& r = config.rules.rules()[*matched.rule];
  if (r.trips.empty())
    return false;
  auto now = rt.now();
  std::string down;
  for (const auto& name : r.trips)
    if (auto* gate = rt.dependency(name); gate && gate->record_failure(now, cur.probe))
      down += (down.empty() ? "'" : ", '") + name + "'";
  if (down.empty() && (r.retry || r.redelivery || r.terminal))
    return false;
  hold_back(self, down.empty()
                    ? "its rule only trips a dependency breaker (" + cur.last_what.type + ")"
                    : "dependency " + down + " is down (" + cur.last_what.type + ")");
  return true;
}

} // namespace bus::detail
