#include "consumer/settling.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "delivery_steps.hpp"

namespace bus::detail {

namespace {

// Ends the current delivery unsettled if it came over a connection that is
// gone (the broker delivers it again): nothing may be done with it, lest it
// live twice. True if it was dropped.
bool dropped_as_stale(consumer* self) {
  auto& cur = *self->state.current;
  const auto& rt = *self->state.rt;
  if (rt.transport().settleable(cur.item.tag))
    return false;
  rt.log().endpoint->warn("message {} came over a connection to '{}' that is gone; the broker "
                          "delivers it again, so this delivery ends here, unsettled",
                          cur.item.message->message_id, cur.item.queue);
  settle_and_report(self, outcome::stale);
  return true;
}

} // namespace

bool claim_ending(consumer* self) {
  auto& cur = *self->state.current;
  const auto& rt = *self->state.rt;
  if (!cur.claim->claim()) {
    rt.log().endpoint->info("message {} was given back to '{}' by the stop of endpoint '{}' before "
                            "its attempt ended; its outcome is dropped",
                            cur.item.message->message_id, cur.item.queue, rt.name());
    self->state.current.reset();
    return false;
  }
  return !dropped_as_stale(self);
}

bool ended_as_stale(consumer* self) {
  if (self->state.rt->transport().settleable(self->state.current->item.tag))
    return false;
  // Claimed, it is dropped as stale; taken back by a stop, it is forgotten.
  (void)claim_ending(self);
  return true;
}

completion to_self(consumer* self, ending_step step) {
  return [me = caf::actor_cast<caf::actor>(self), tag = self->state.current->item.tag,
          step](result<void> sent) { caf::anon_send(me, sent_atom::value, tag, step, std::move(sent)); };
}

void report_and_go_on(consumer* self, outcome result) {
  auto& st = self->state;
  auto tag = st.current->item.tag;
  // Lingering pays where handlers are short: a thread that blocked for a
  // while (a database call) is better off asleep than spinning, and the
  // test coordinator runs every actor on one thread, where the endpoint
  // cannot offer while a consumer lingers. (Without offers, on a durable
  // broker, there is no line to look at: offers_ahead.)
  auto started = st.current->attempt_started;
  st.current.reset();
  std::uint64_t taken = 0;
  if (st.ready && !st.next) {
    auto linger = !st.rt->config().deterministic
                  && st.rt->now() - started < ready_line::short_attempt;
    st.next = linger ? st.ready->take_lingering(ready_line::linger) : st.ready->take();
    if (st.next) {
      taken = st.next->id;
      self->send(self, next_atom::value);
    }
  }
  self->send(st.endpoint, done_atom::value, tag, result, taken);
}

void settle_and_report(consumer* self, outcome result) {
  settle(*self->state.rt, self->state.current->item, result);
  report_and_go_on(self, result);
}

} // namespace bus::detail
