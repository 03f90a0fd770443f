#include "outbox_sweeper_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/header_names.hpp"
#include "delivery_steps.hpp"

namespace bus::detail {

namespace {

using sweeper = caf::stateful_actor<outbox_sweeper_state>;

const outbox_options& options_of(sweeper* self) { return self->state.rt->definition().outbox; }
message_store& store_of(sweeper* self) { return *self->state.rt->definition().store; }

// A stored send that no longer reads (a record of another version, a
// corrupt row), as a message for the error queue of the endpoint that
// stored it, with the reason: an operator can see it, and the sweep goes
// on. Its message id names the record it came from. It is one of the
// record's sends: the record is marked (and its rows deleted) only once
// the error queue has it, and released for a later sweep if it refuses.
outgoing_message unreadable_for_error_queue(const endpoint_runtime& rt, const orphan& o,
                                            std::size_t position, const std::string& row,
                                            const std::string& why) {
  outgoing_message out;
  out.queue = rt.definition().error_queue;
  auto& copy = out.message;
  copy.message_id = o.key.message_id + ".outbox." + std::to_string(position + 1);
  copy.message_type = "bus.unreadable_outbox_row";
  copy.sent_at = rt.now();
  copy.source_address = o.key.endpoint;
  copy.body = message_body::text(row);
  copy.headers.set(header::fault_message, why);
  copy.headers.set(header::fault_exception_type, "bus::message_deserialization_error");
  copy.headers.set(header::fault_endpoint, o.key.endpoint);
  copy.headers.set(header::fault_at, to_iso8601(rt.now()));
  rt.log().outbox->error("the stored send {} of message {} on endpoint '{}' cannot be read ({}); "
                         "moving it to '{}'",
                         position + 1, o.key.message_id, o.key.endpoint, why, out.queue);
  return out;
}

// The sends of one claimed record are all answered.
void record_done(sweeper* self, std::uint64_t claim) {
  auto& st = self->state;
  auto found = st.in_flight.find(claim);
  auto sending = std::move(found->second);
  st.in_flight.erase(found);
  const auto& rt = *st.rt;
  if (sending.failed) {
    if (auto released = store_of(self).release(sending.key); !released)
      rt.log().outbox->warn("cannot release the stored sends of message {} ({}); another sweep "
                            "takes them once this process's lease ends",
                            sending.key.message_id, to_string(released.error()));
    return;
  }
  if (auto marked = store_of(self).mark_dispatched(sending.key, rt.now()); !marked)
    rt.log().outbox->warn("sent the stored sends of message {}, but cannot mark them ({}); they "
                          "go out again at a later sweep",
                          sending.key.message_id, to_string(marked.error()));
}

void send_orphan(sweeper* self, orphan o) {
  auto& st = self->state;
  const auto& rt = *st.rt;
  std::vector<outgoing_message> sends;
  for (std::size_t i = 0; i < o.stored.size(); ++i) {
    auto out = decode_outgoing(o.stored[i]);
    sends.push_back(out ? std::move(*out)
                        : unreadable_for_error_queue(rt, o, i, o.stored[i], out.error().message));
  }
  rt.log().outbox->warn("sending {} message(s) that message {} on endpoint '{}' stored and a "
                        "process that is gone never sent",
                        sends.size(), o.key.message_id, o.key.endpoint);
  auto claim = ++st.claims;
  st.in_flight[claim] = {std::move(o.key), sends.size(), false};
  if (sends.empty()) {
    record_done(self, claim);
    return;
  }
  auto me = caf::actor_cast<caf::actor>(self);
  for (auto& out : sends)
    send_outgoing(rt, std::move(out), [me, claim](result<void> sent) {
      caf::anon_send(me, swept_atom::value, claim, std::move(sent));
    });
}

// What the endpoint's outbox still has to send, for its stats and metrics:
// a sweep's look, so the gauge costs one query per sweep interval.
void count_backlog(const endpoint_runtime& rt) {
  auto backlog = rt.definition().store->backlog();
  if (!backlog) {
    rt.log().outbox->warn("cannot count what the outbox of endpoint '{}' has to send ({})",
                          rt.name(), to_string(backlog.error()));
    return;
  }
  std::uint64_t messages = 0;
  std::uint64_t sends = 0;
  for (const auto& b : *backlog)
    if (b.endpoint == rt.name()) {
      messages = b.messages;
      sends = b.sends;
    }
  rt.counters().outbox_pending.store(messages, std::memory_order_relaxed);
  rt.counters().outbox_pending_sends.store(sends, std::memory_order_relaxed);
}

void sweep(sweeper* self) {
  const auto& rt = *self->state.rt;
  const auto& o = options_of(self);
  auto now = rt.now();
  if (auto renewed = store_of(self).renew_lease(outbox_lease_end(now, o)); !renewed) {
    // The store is away or silent: the rest of the sweep would wait out
    // its deadlines again, call by call, and hold up a stop behind them.
    rt.log().outbox->warn("cannot renew the outbox's lease for endpoint '{}' ({}); sweeping again "
                          "in {}",
                          rt.name(), to_string(renewed.error()), to_hms(o.sweep_interval));
    self->delayed_send(self, o.sweep_interval, sweep_atom::value);
    return;
  }
  auto claimed = store_of(self).claim_orphans(rt.name(), now, o.sweep_batch);
  if (!claimed)
    rt.log().outbox->warn("cannot look for orphaned sends in the outbox of endpoint '{}' ({})",
                          rt.name(), to_string(claimed.error()));
  else
    for (auto& orphan : *claimed)
      send_orphan(self, std::move(orphan));
  count_backlog(rt);
  self->delayed_send(self, o.sweep_interval, sweep_atom::value);
}

} // namespace

caf::behavior outbox_sweeper_actor(sweeper* self, endpoint_runtime_ptr rt) {
  self->state.rt = std::move(rt);
  self->send(self, sweep_atom::value); // at once: what this process left before a restart
  return {
    [=](sweep_atom) { sweep(self); },
    [=](swept_atom, std::uint64_t claim, result<void>& sent) {
      auto& st = self->state;
      auto found = st.in_flight.find(claim);
      if (found == st.in_flight.end())
        return;
      if (!sent) {
        st.rt->log().outbox->warn("a stored send of message {} did not go out ({})",
                                  found->second.key.message_id, to_string(sent.error()));
        found->second.failed = true;
      }
      if (--found->second.left == 0)
        record_done(self, claim);
    },
    [=](stop_atom) {
      self->quit();
      return ok_atom::value;
    },
  };
}

} // namespace bus::detail
