#include "consumer/outbox.hpp"

#include <stdexcept>


#include "bus/deadline.hpp"
#include "bus/servicecontrol.hpp"
#include "consumer/outcome.hpp"
#include "consumer/settling.hpp"
#include "delivery_steps.hpp"
#include "metrics/instruments.hpp"
#include "outgoing.hpp"

namespace bus::detail {

namespace {

message_store& store_of(consumer* self) { return *self->state.rt->definition().store; }

inbox_key key_of(consumer* self) {
  const auto& rt = *self->state.rt;
  return {rt.name(), self->state.current->item.message->message_id};
}

// A failure of the store is a failed attempt like a handler's exception:
// the policy decides, and a rule may trip a dependency breaker on it.
void store_failed(consumer* self, const char* doing, const bus::error& err) {
  const auto& rt = *self->state.rt;
  auto why = std::string("the message store (") + std::string(store_of(self).name())
             + ") failed " + doing + ": " + to_string(err);
  rt.log().outbox->warn("message {} on endpoint '{}': {}",
                        self->state.current->item.message->message_id, rt.name(), why);
  on_failure(self, std::make_exception_ptr(store_error(why)));
}

// Every stored send is out: marks them dispatched, then the delivery is
// handled. A mark that fails gives the delivery back to its queue: when it
// returns, its stored sends go out (again) and the mark is tried again.
void stored_sends_out(consumer* self) {
  auto& cur = *self->state.current;
  const auto& rt = *self->state.rt;
  if (auto marked = store_of(self).mark_dispatched(key_of(self), rt.now()); !marked) {
    rt.log().outbox->warn("the messages stored by message {} on endpoint '{}' are sent, but the "
                          "store cannot record it ({}); returning the message to '{}', which "
                          "sends them again and retries the record",
                          cur.item.message->message_id, rt.name(), to_string(marked.error()),
                          cur.item.queue);
    settle_and_report(self, outcome::requeue);
    return;
  }
  // Sends a copy found stored have no commit of this process to time.
  auto* instruments = rt.status().instruments.get();
  if (instruments && cur.committed_at != time_point{})
    instruments->outbox_dispatch.observe(rt.now() - cur.committed_at);
  succeed(self);
}

// Sends the attempt's outbox; outbox_sent() hears of each send.
void release_outbox(consumer* self, std::vector<outgoing_message> outbox) {
  auto& cur = *self->state.current;
  if (outbox.empty()) {
    succeed(self);
    return;
  }
  cur.outbox_left = outbox.size();
  for (auto& out : outbox)
    send_outgoing(*self->state.rt, std::move(out), to_self(self, ending_step::outbox));
}

// Stores the handler's sends and commits them with its own writes. False
// if the commit failed; the attempt failed then.
bool commit_attempt(consumer* self, const std::vector<outgoing_message>& outbox) {
  auto& cur = *self->state.current;
  auto transaction = std::move(cur.transaction);
  auto rows = encode_outgoing(outbox);
  if (!rows) {
    transaction->rollback();
    on_failure(self, std::make_exception_ptr(std::runtime_error(
                       "a message the handler sent cannot be stored: " + to_string(rows.error()))));
    return false;
  }
  if (auto committed = transaction->commit(*rows); !committed) {
    store_failed(self, "to commit the attempt", committed.error());
    return false;
  }
  cur.sends_stored = !outbox.empty();
  cur.committed_at = self->state.rt->now();
  return true;
}

// The message was handled here before and its sends went out: this copy
// ends without its handler.
void drop_duplicate(consumer* self) {
  if (!claim_ending(self))
    return;
  const auto& rt = *self->state.rt;
  rt.counters().duplicates.fetch_add(1, std::memory_order_relaxed);
  rt.log().outbox->info("message {} was handled by endpoint '{}' already (its inbox record); "
                        "acknowledging this copy without running the handler",
                        self->state.current->item.message->message_id, rt.name());
  succeed(self);
}

// The message was handled here before, but its stored sends did not all go
// out (a crash, a broker away): they go out now, not the handler again.
void dispatch_stored(consumer* self, const std::vector<std::string>& rows) {
  const auto& rt = *self->state.rt;
  const auto& id = self->state.current->item.message->message_id;
  std::vector<outgoing_message> outbox;
  outbox.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto out = decode_outgoing(rows[i]);
    if (!out) {
      // No retry makes the row readable: the message goes to the error
      // queue with the reason, and the row stays for an operator.
      on_failure(self, std::make_exception_ptr(message_deserialization_error(
                         "stored outgoing message " + std::to_string(i + 1) + " of "
                         + std::to_string(rows.size()) + " cannot be read: "
                         + out.error().message)));
      return;
    }
    outbox.push_back(std::move(*out));
  }
  if (!claim_ending(self))
    return;
  // A copy too: the handler does not run again.
  rt.counters().duplicates.fetch_add(1, std::memory_order_relaxed);
  rt.log().outbox->info("message {} was handled by endpoint '{}' already; sending the {} message(s) "
                        "it stored that did not all go out",
                        id, rt.name(), outbox.size());
  if (outbox.empty()) {
    stored_sends_out(self);
    return;
  }
  self->state.current->sends_stored = true;
  release_outbox(self, std::move(outbox));
}

} // namespace

bool open_inbox(consumer* self) {
  auto& cur = *self->state.current;
  cur.sends_stored = false;
  cur.committed_at = {};
  auto entry = store_of(self).receive(key_of(self), self->state.rt->now());
  if (!entry) {
    store_failed(self, "to open the attempt's transaction", entry.error());
    return false;
  }
  switch (entry->state) {
    case inbox_state::first:
      cur.transaction = std::move(entry->transaction);
      cur.claim->hold_interrupter(cur.transaction->interrupter());
      return true;
    case inbox_state::dispatched: drop_duplicate(self); return false;
    case inbox_state::stored: dispatch_stored(self, entry->stored); return false;
  }
  return false;
}

void roll_back_attempt(consumer* self) {
  auto& cur = *self->state.current;
  if (auto transaction = std::move(cur.transaction))
    transaction->rollback();
}

// After a handler returned normally: its outbox goes out first. With a
// message store it is committed first, with the handler's own writes; a
// delivery taken back by a stop meanwhile comes back and finds it stored.
void on_success(consumer* self, handler_context& ctx) {
  auto outbox = ctx.take_outbox();
  const auto& rt = *self->state.rt;
  const auto& handled = *self->state.current->item.message;
  if (rt.definition().inherit_deadline) // issue 14, opt-in
    for (auto& out : outbox)
      inherit_deadline(out.message, handled);
  if (const auto* names = rt.definition().masstransit.get())
    for (auto& out : outbox)
      speak_masstransit(*names, handled, out);
  if (const auto* names = rt.definition().nservicebus.get())
    for (auto& out : outbox)
      speak_nservicebus(rt, *names, handled, out);
  // A retry from ServicePulse that worked: ServiceControl is told, as
  // NServiceBus tells it, with the handler's own messages. Only such a
  // retry carries its id: no other success draws a message id or reads
  // the clock for it.
  if (handled.headers.contains(servicecontrol::header::retry_id))
    if (auto ack = servicecontrol::retry_acknowledgement(handled, rt.now(), new_message_id(),
                                                         rt.name()))
      outbox.push_back(std::move(*ack));
  if (self->state.current->transaction && !commit_attempt(self, outbox))
    return;
  if (claim_ending(self))
    release_outbox(self, std::move(outbox));
}

void outbox_sent(consumer* self, result<void> sent) {
  auto& cur = *self->state.current;
  if (!sent && !cur.outbox_error)
    cur.outbox_error = sent.error();
  if (--cur.outbox_left > 0)
    return;
  if (!cur.outbox_error) {
    if (cur.sends_stored)
      stored_sends_out(self);
    else
      succeed(self);
    return;
  }
  // The handler's messages could not all be sent: the attempt failed.
  auto why = to_string(*cur.outbox_error);
  cur.outbox_error.reset();
  cur.claim->release();
  on_failure(self, std::make_exception_ptr(std::runtime_error(why)));
}

} // namespace bus::detail
