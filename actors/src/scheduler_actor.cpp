#include "scheduler_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/header_names.hpp"
#include "dead_letter_file.hpp"
#include "delivery_steps.hpp"

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

// Waits until `due`, counted as pending.
void keep(scheduler* self, caf::actor_clock::time_point due, pending_redelivery msg) {
  self->state.rt->counters().pending_redelivery.fetch_add(1, std::memory_order_relaxed);
  self->state.memory->hold(due, std::move(msg));
}

// Puts messages back on the endpoint's input queue, in one call to the
// transport. They no longer count as pending from the moment they are
// handed over; the transport's answers go to the memory, and a refusal
// makes one pending again, kept whole.
void send_back(scheduler* self, std::vector<pending_redelivery> msgs) {
  const auto& rt = *self->state.rt;
  rt.counters().pending_redelivery.fetch_sub(static_cast<std::int64_t>(msgs.size()),
                                             std::memory_order_relaxed);
  self->state.memory->hand_back(
    std::move(msgs), [&](const std::vector<pending_redelivery>& ms, indexed_completion done) {
      std::vector<envelope_ptr> shared(ms.begin(), ms.end());
      rt.transport().async_send_shared_all(rt.name(), shared, std::move(done));
    });
}

// During a stop, the last place for a redelivery the queue refused: the
// process, and the memory that held it, are about to end.
void keep_in_file(scheduler* self, const pending_redelivery& msg, const bus::error& why) {
  const auto& rt = *self->state.rt;
  auto reason = "its redelivery could not be returned to '" + rt.name() + "' as the endpoint "
                + "stopped: " + to_string(why);
  // One held back on its way to the error queue carries its fault already.
  auto fault = msg->headers.find(header::fault_pending)
                 ? fault_from_headers(*msg)
                 : make_fault(rt, delivery{0, rt.name(), msg, false, std::nullopt},
                              exception_info{"none", "waiting for its redelivery"}, reason, 0);
  fault.reason = reason;
  auto file = append_dead_letter(rt.config().dead_letter_directory, rt.name(), *msg, fault);
  if (file) {
    rt.log().delayed_retry->error("cannot return message {} to '{}' for redelivery as it stops "
                                  "({}); wrote it to the dead-letter file '{}'",
                                  msg->message_id, rt.name(), to_string(why), *file);
    return;
  }
  rt.log().delayed_retry->critical("cannot return message {} to '{}' for redelivery as it stops "
                                   "({}), nor write it to a dead-letter file ({}): it is lost",
                                   msg->message_id, rt.name(), to_string(why),
                                   to_string(file.error()));
}

void arm(scheduler* self);

// The returns the transport refused since the last look: kept whole and
// tried again a second later (the transport may come back), or during a
// stop written to the dead-letter file.
void take_refused(scheduler* self) {
  auto& st = self->state;
  auto refused = st.memory->take_refused();
  for (auto& r : refused) {
    if (st.stopping) {
      keep_in_file(self, r.message, r.why);
      continue;
    }
    st.rt->log().delayed_retry->error(
      "cannot return message {} to '{}' for redelivery: {}; trying again in 1 s",
      r.message->message_id, st.rt->name(), to_string(r.why));
    keep(self, self->clock().now() + std::chrono::seconds(1), std::move(r.message));
  }
  if (!refused.empty() && !st.stopping)
    arm(self);
}

// Arms one timer for the earliest due time, unless one is armed for it
// already. A timer armed for a later time becomes stale by generation.
void arm(scheduler* self) {
  auto& st = self->state;
  auto due = st.memory->plan_wake(st.armed ? std::optional{st.armed_for} : std::nullopt);
  if (!due)
    return;
  st.armed = true;
  st.armed_for = *due;
  auto generation = ++st.timer_generation;
  self->scheduled_send(self, *due, tick_atom::value, generation);
}

// At most this many go back per turn. A million due at once then never
// hold one CAF worker for seconds: the endpoint and its consumers, and
// every other actor, get their turns in between, and the first message is
// back on the queue at once, not after the last one left the heap.
constexpr std::size_t returns_per_turn = 256;

void fire_due(scheduler* self) {
  auto& st = self->state;
  auto now = self->clock().now();
  std::vector<pending_redelivery> due;
  due.reserve(returns_per_turn);
  auto more = st.memory->take_due(now, returns_per_turn, due);
  send_back(self, std::move(due));
  if (!more) {
    arm(self);
    return;
  }
  // The rest in a turn of its own, as a tick that is due already. A
  // consumer's earlier hand-off needs no wake-up meanwhile: this tick
  // plans again.
  st.armed = true;
  st.armed_for = now;
  self->send(self, tick_atom::value, ++st.timer_generation);
}

// Once a stop was asked for and nothing is on its way back any more.
void finish_if_done(scheduler* self) {
  auto& st = self->state;
  if (!st.stopping)
    return;
  // An answer may be in the memory before its wake-up is in the mailbox
  // (a transport that answers inside the call).
  take_refused(self);
  if (st.memory->returning() || !st.handoffs.empty())
    return;
  st.stopped.deliver(ok_atom::value);
  self->quit();
}

caf::error refusal(const bus::error& err) {
  return caf::error(refusal_code(err.code), scheduler_refusal, caf::make_message(to_string(err)));
}

// A new scheduler takes over what the memory holds: everything waiting,
// and what a scheduler that died left unanswered, due a second later (as
// a refusal: the call that killed the last one must not loop hot).
void take_over(scheduler* self) {
  auto& st = self->state;
  auto left = st.memory->take_over(self->address());
  auto held = left.size() + st.memory->waiting();
  if (held > 0)
    st.rt->log().delayed_retry->warn("scheduler of endpoint '{}' takes over {} redeliveries from "
                                     "the one before it",
                                     st.rt->name(), held);
  for (auto& msg : left)
    keep(self, self->clock().now() + std::chrono::seconds(1), std::move(msg));
  arm(self);
}

} // namespace

caf::behavior scheduler_actor(scheduler* self, endpoint_runtime_ptr rt,
                              std::shared_ptr<redelivery_memory> memory) {
  self->state.rt = std::move(rt);
  self->state.memory = std::move(memory);
  take_over(self);
  return {
    // A hand-off to the broker's delay levels (a transport with delayed
    // delivery); in memory, consumers put theirs in the memory themselves.
    [=](schedule_atom, pending_redelivery& msg, duration delay,
        announcement& notice) -> caf::result<ok_atom> {
      auto& st = self->state;
      // The broker holds it: it survives this process. Accepted once the
      // broker confirmed it; it parks it for at least one delay unit, far
      // longer than its confirmation takes to arrive.
      auto id = st.next_handoff++;
      auto reply = self->make_response_promise();
      st.handoffs.emplace(id, handoff{reply, std::move(notice)});
      st.rt->transport().async_send_delayed(st.rt->name(), std::move(*msg), delay,
                                            reply_to(self, held_atom::value, id));
      return caf::delegated<ok_atom>{};
    },
    // A consumer put a message in the memory that is due before the timer.
    [=](arm_atom) {
      if (!self->state.stopping)
        arm(self);
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
    // The transport refused a message on its way back (it waits in the
    // memory), or, during a stop, answered for the last one.
    [=](returned_atom) {
      take_refused(self);
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
      take_refused(self); // first, while they can still wait: returned with the rest
      st.stopping = true;
      st.memory->wake_when_idle(); // before finish_if_done looks
      auto left = st.memory->close_and_drain();
      if (!left.empty())
        st.rt->log().delayed_retry->warn(
          "scheduler of endpoint '{}' stops with {} redeliveries pending; returning them to '{}' now",
          st.rt->name(), left.size(), st.rt->name());
      send_back(self, std::move(left));
      st.stopped = self->make_response_promise();
      finish_if_done(self);
      return caf::delegated<ok_atom>{};
    },
  };
}

} // namespace bus::detail
