#include "scheduler_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

namespace {

using scheduler = caf::stateful_actor<scheduler_state>;

// A completion of the transport, on whatever thread it runs, becomes a
// message to the scheduler.
template <class Atom, class Key>
completion reply_to(scheduler* self, Atom atom, Key key) {
  return [me = caf::actor_cast<caf::actor>(self), atom, key = std::move(key)](result<void> r) {
    caf::anon_send(me, atom, key, std::move(r));
  };
}

// Puts a message back on the endpoint's input queue. It no longer counts
// as pending from the moment it is handed over; its completion comes back
// as returned_atom, and a refusal makes it pending again, kept for later.
void send_back(scheduler* self, pending_redelivery msg) {
  const auto& rt = *self->state.rt;
  ++self->state.returning;
  rt.counters().pending_redelivery.fetch_sub(1, std::memory_order_relaxed);
  envelope_ptr shared = msg;
  rt.transport().async_send_shared(rt.name(), std::move(shared),
                                   reply_to(self, returned_atom::value, std::move(msg)));
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
  st.pending.pop_due(self->clock().now(), [&](pending_redelivery msg) { send_back(self, msg); });
  arm(self);
}

// Once a stop was asked for and nothing is on its way back any more.
void finish_if_done(scheduler* self) {
  auto& st = self->state;
  if (!st.stopping || st.returning > 0 || !st.handoffs.empty())
    return;
  if (st.unreturned > 0)
    st.rt->log().delayed_retry->error(
      "scheduler of endpoint '{}' could not return {} redeliveries to their queue", st.rt->name(),
      st.unreturned);
  st.stopped.deliver(ok_atom::value);
  self->quit();
}

caf::error refusal(const bus::error& err) {
  return caf::error(refusal_code(err.code), scheduler_refusal, caf::make_message(to_string(err)));
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
        // broker confirmed it; it parks it for at least one delay unit, far
        // longer than its confirmation takes to arrive.
        auto id = st.next_handoff++;
        auto reply = self->make_response_promise();
        st.handoffs.emplace(id, handoff{reply, std::move(notice)});
        transport.async_send_delayed(st.rt->name(), std::move(*msg), delay,
                                     reply_to(self, held_atom::value, id));
        return caf::delegated<ok_atom>{};
      }
      st.rt->counters().pending_redelivery.fetch_add(1, std::memory_order_relaxed);
      st.rt->emit_prepared(notice); // before any timer can send it back
      st.pending.push(self->clock().now() + delay, std::move(msg));
      arm(self);
      return ok_atom::value;
    },
    [=](held_atom, std::uint64_t id, result<void>& held) {
      auto& st = self->state;
      auto it = st.handoffs.find(id);
      if (it == st.handoffs.end())
        return;
      auto h = std::move(it->second);
      st.handoffs.erase(it);
      if (held) {
        st.rt->emit_prepared(h.notice);
        h.reply.deliver(ok_atom::value);
      } else {
        h.reply.deliver(refusal(held.error()));
      }
      finish_if_done(self);
    },
    [=](returned_atom, pending_redelivery& msg, result<void>& sent) {
      auto& st = self->state;
      --st.returning;
      if (!sent && st.stopping) {
        ++st.unreturned;
        st.rt->log().delayed_retry->error("cannot return message {} to '{}' for redelivery: {}",
                                          msg->message_id, st.rt->name(),
                                          to_string(sent.error()));
      } else if (!sent) {
        // Kept whole; tried again a second later: the transport may come back.
        st.rt->log().delayed_retry->error(
          "cannot return message {} to '{}' for redelivery: {}; trying again in 1 s",
          msg->message_id, st.rt->name(), to_string(sent.error()));
        st.rt->counters().pending_redelivery.fetch_add(1, std::memory_order_relaxed);
        st.pending.push(self->clock().now() + std::chrono::seconds(1), std::move(msg));
        arm(self);
      }
      finish_if_done(self);
    },
    [=](tick_atom, std::uint64_t generation) {
      auto& st = self->state;
      if (generation != st.timer_generation || st.stopping)
        return; // stale: an earlier due time re-armed the timer
      st.armed = false;
      fire_due(self);
    },
    // Answers once everything it held is back on the queue, so that the
    // endpoint finishes only after that.
    [=](stop_atom) -> caf::result<ok_atom> {
      auto& st = self->state;
      st.stopping = true;
      auto left = st.pending.drain();
      if (!left.empty())
        st.rt->log().delayed_retry->warn(
          "scheduler of endpoint '{}' stops with {} redeliveries pending; returning them to '{}' now",
          st.rt->name(), left.size(), st.rt->name());
      for (auto& msg : left)
        send_back(self, std::move(msg));
      st.stopped = self->make_response_promise();
      finish_if_done(self);
      return caf::delegated<ok_atom>{};
    },
  };
}

} // namespace bus::detail
