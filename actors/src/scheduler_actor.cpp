#include "scheduler_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

namespace {

using scheduler = caf::stateful_actor<scheduler_state>;

// Puts a message back on the endpoint's input queue. A refusal is logged
// and the message is kept for the next timer rather than dropped.
bool send_back(scheduler* self, pending_redelivery& msg) {
  const auto& rt = *self->state.rt;
  auto id = msg->message_id;
  auto sent = rt.transport().send(rt.name(), std::move(*msg));
  if (!sent) {
    rt.log().delayed_retry->error("cannot return message {} to '{}' for redelivery: {}", id,
                                  rt.name(), to_string(sent.error()));
    return false;
  }
  rt.counters().pending_redelivery.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

// Arms one timer for the earliest due time, unless one is armed for it
// already. A timer armed for a later time becomes stale by generation.
void arm(scheduler* self) {
  auto& st = self->state;
  auto due = st.pending.next_due();
  if (!due || (st.armed && st.armed_for <= *due))
    return;
  st.armed = true;
  st.armed_for = *due;
  auto generation = ++st.timer_generation;
  self->scheduled_send(self, *due, tick_atom::value, generation);
}

void fire_due(scheduler* self) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::vector<pending_redelivery> refused;
  st.pending.pop_due(now, [&](pending_redelivery msg) {
    if (!send_back(self, msg))
      refused.push_back(std::move(msg));
  });
  // Try refused ones again a second later: the transport may come back.
  for (auto& msg : refused)
    st.pending.push(now + std::chrono::seconds(1), std::move(msg));
  arm(self);
}

} // namespace

caf::behavior scheduler_actor(scheduler* self, endpoint_runtime_ptr rt) {
  self->state.rt = std::move(rt);
  return {
    [=](schedule_atom, pending_redelivery& msg, duration delay,
        announcement& notice) -> caf::result<ok_atom> {
      auto& st = self->state;
      auto& transport = st.rt->transport();
      if (transport.capabilities().delayed_delivery) {
        // The broker holds it: it survives this process. Accepted once the
        // transport has it; the broker parks it for at least one delay unit,
        // far longer than its confirmation takes to arrive.
        auto held = transport.send_delayed(st.rt->name(), std::move(*msg), delay);
        if (!held)
          return caf::error(refusal_code(held.error().code), scheduler_refusal,
                            caf::make_message(to_string(held.error())));
        st.rt->emit_prepared(notice);
        return ok_atom::value;
      }
      st.rt->counters().pending_redelivery.fetch_add(1, std::memory_order_relaxed);
      st.rt->emit_prepared(notice); // before any timer can send it back
      st.pending.push(self->clock().now() + delay, std::move(msg));
      arm(self);
      return ok_atom::value;
    },
    [=](tick_atom, std::uint64_t generation) {
      auto& st = self->state;
      if (generation != st.timer_generation)
        return; // stale: an earlier due time re-armed the timer
      st.armed = false;
      fire_due(self);
    },
    // Answers once everything it held is back on the queue, so that the
    // endpoint finishes only after that.
    [=](stop_atom) -> ok_atom {
      auto& st = self->state;
      auto left = st.pending.drain();
      if (!left.empty())
        st.rt->log().delayed_retry->warn(
          "scheduler of endpoint '{}' stops with {} redeliveries pending; returning them to '{}' now",
          st.rt->name(), left.size(), st.rt->name());
      std::size_t lost = 0;
      for (auto& msg : left)
        if (!send_back(self, msg))
          ++lost;
      if (lost > 0)
        st.rt->log().delayed_retry->error(
          "scheduler of endpoint '{}' could not return {} redeliveries to their queue", st.rt->name(),
          lost);
      self->quit();
      return ok_atom::value;
    },
  };
}

} // namespace bus::detail
