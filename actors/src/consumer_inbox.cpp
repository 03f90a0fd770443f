#include "consumer_inbox.hpp"

#include <caf/all.hpp>

#include "bus/policy/error_context.hpp"
#include "consumer_endings.hpp"
#include "metrics/instruments.hpp"

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
    case inbox_state::first: cur.transaction = std::move(entry->transaction); return true;
    case inbox_state::dispatched: drop_duplicate(self); return false;
    case inbox_state::stored: dispatch_stored(self, entry->stored); return false;
  }
  return false;
}

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

void roll_back_attempt(consumer* self) {
  auto& cur = *self->state.current;
  if (auto transaction = std::move(cur.transaction))
    transaction->rollback();
}

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

} // namespace bus::detail
