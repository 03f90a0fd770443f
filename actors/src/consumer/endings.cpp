#include "consumer/endings.hpp"

#include <algorithm>

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/header_names.hpp"
#include "consumer/settling.hpp"
#include "dead_letter_file.hpp"
#include "delivery_steps.hpp"
#include "log_line.hpp"
#include "scheduler_actor.hpp"
#include "tracing.hpp"

namespace bus::detail {

namespace {

using namespace std::chrono_literals;

current_delivery& current(consumer* self) { return *self->state.current; }
const endpoint_runtime& runtime(consumer* self) { return *self->state.rt; }

// Whether a refusal is for now only: the transport could not reach its
// broker, or not in time. Anything else will not go away by waiting.
bool for_now(const bus::error& err) { return err.code == errc::transport_failure; }

// What each waiting step is called in log lines.
std::string waiting_for_what(consumer* self, ending_step step) {
  const auto& cur = current(self);
  switch (step) {
    case ending_step::redelivery: return "over for its redelivery";
    case ending_step::error_queue:
    case ending_step::minimal_error_queue: return "to the error queue '" + cur.fault_queue + "'";
    case ending_step::skipped_queue:
      return "to the skipped queue '" + runtime(self).definition().skipped_queue + "'";
    case ending_step::outbox: break;
  }
  return "on";
}

void park_for_later(consumer* self);

// A refusal for now: keep the message and the slot, and try `step` again
// after 1 s, doubling to 30 s: an outage costs time, never the message,
// and never a second ending (its delivery cannot be acknowledged while
// the broker is out of reach either, and would come back). During a stop
// the message goes back to its queue instead; one bound for the error
// queue is parked, marked, so that its fate holds when it comes back.
void hold_and_retry(consumer* self, ending_step step, const std::string& why) {
  auto& cur = current(self);
  const auto& rt = runtime(self);
  auto& log = step == ending_step::redelivery ? *rt.log().delayed_retry
              : step == ending_step::skipped_queue ? *rt.log().skipped
                                                   : *rt.log().move_to_error;
  auto verb = step == ending_step::redelivery ? "hand" : "move";
  auto fault_decided =
    step == ending_step::error_queue || step == ending_step::minimal_error_queue;
  if (rt.run().stop_requested.load() && fault_decided) {
    // Its handler must not run again: the scheduler holds it with the
    // held-back mark and gives it back to the queue as the stop ends.
    log.warn("cannot move message {} {} ({}) while endpoint '{}' stops; it goes back to '{}' "
             "marked for the error queue",
             cur.item.message->message_id, waiting_for_what(self, step), why, rt.name(),
             cur.item.queue);
    park_for_later(self);
    return;
  }
  if (rt.run().stop_requested.load()) {
    log.warn("cannot {} message {} {} ({}) while endpoint '{}' stops; returning it to '{}'", verb,
             cur.item.message->message_id, waiting_for_what(self, step), why, rt.name(),
             cur.item.queue);
    settle_and_report(self, outcome::requeue);
    return;
  }
  auto pause = std::min<duration>(1s * (1 << std::min(cur.refusals, 5)), 30s);
  ++cur.refusals;
  cur.waiting_for = step;
  cur.claim->release(); // a stop may take it back while it waits
  log.warn("cannot {} message {} {} ({}); keeping it and trying again in {}", verb,
           cur.item.message->message_id, waiting_for_what(self, step), why, to_hms(pause));
  self->delayed_send(self, pause, again_atom::value, cur.item.tag);
}

// Tells the observer how a message ended after a failure.
void emit_end(consumer* self, event_kind kind, const fault_details& fault) {
  const auto& cur = current(self);
  runtime(self).emit(kind, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = fault.exception.type;
    e.detail = fault.reason;
  });
}

// fault<T>, once, as the message ends in fault. Its own refusal is logged:
// the message itself is safe already.
void raise_fault(consumer* self, const fault_details& fault) {
  const auto& cur = current(self);
  auto event = fault_event(runtime(self), *cur.item.message, cur.body, fault);
  if (!event)
    return;
  // Sent on behalf of the attempt that failed last: a child of its span.
  carry_trace(*cur.item.message, cur.attempt, cur.attempt_started, event->message);
  // The completion runs on the transport's thread: it holds the logger
  // only, never the endpoint's runtime, whose last reference would then
  // destroy the transport on its own thread.
  auto done = [log = runtime(self).log().move_to_error, id = cur.item.message->message_id,
               type = event->message.message_type](result<void> raised) {
    if (!raised)
      log->error("cannot raise {} for message {}: {}", type, id, to_string(raised.error()));
  };
  auto& transport = runtime(self).transport();
  if (event->queue.empty())
    transport.async_publish(std::move(event->message), std::move(done));
  else
    transport.async_send(event->queue, std::move(event->message), std::move(done));
}

// The message is on the error queue (or in the file): it ended in fault.
void dead_lettered(consumer* self) {
  auto fault = std::move(*current(self).fault);
  raise_fault(self, fault);
  emit_end(self, event_kind::dead_lettered, fault);
  settle_and_report(self, outcome::dead_lettered);
}

// Starts a hand-off to the scheduler for `step`. The returned check tells
// an answer that still counts: the delivery is current, and the hand-off
// was not given up since (its scheduler died: see scheduler_replaced).
std::function<bool()> begin_handoff(consumer* self, ending_step step) {
  auto& cur = current(self);
  cur.handing_off = step;
  auto tag = cur.item.tag;
  auto handoff = ++cur.handoff;
  return [self, tag, handoff] {
    auto& cur = self->state.current;
    if (!cur || cur->item.tag != tag || cur->handoff != handoff || !cur->handing_off)
      return false;
    cur->handing_off.reset();
    return true;
  };
}

// Hands `copy` to the scheduler for `step`, to come back after `delay`,
// raising `notice` (null for none) as it is accepted; then calls
// accepted() or refused(error). In memory, the consumer puts it in the
// endpoint's memory itself, and it is held when the call returns: no
// request, no answer, and the scheduler is woken only if its timer is too
// late for it. To a broker's delay levels it goes through the scheduler,
// and is accepted once the broker confirmed it.
template <class Accepted, class Refused>
void hand_to_scheduler(consumer* self, ending_step step, pending_redelivery copy, duration delay,
                       announcement notice, Accepted accepted, Refused refused) {
  const auto& rt = runtime(self);
  if (!rt.transport().capabilities().delayed_delivery) {
    auto& pending = rt.counters().pending_redelivery;
    pending.fetch_add(1, std::memory_order_relaxed); // before a timer can return it
    auto held = self->state.redeliveries->accept(self->clock().now() + delay, std::move(copy),
                                                 [&] { rt.emit_prepared(notice); });
    if (held == redelivery_memory::accepted::no) {
      pending.fetch_sub(1, std::memory_order_relaxed);
      refused(caf::error(refusal_code(errc::transport_failure), scheduler_refusal,
                         caf::make_message(std::string("the scheduler has stopped"))));
      return;
    }
    if (held == redelivery_memory::accepted::yes_wake_owner)
      self->send(self->state.scheduler, arm_atom::value);
    accepted();
    return;
  }
  auto answered = begin_handoff(self, step);
  self->request(self->state.scheduler, caf::infinite, schedule_atom::value, std::move(copy), delay,
                std::move(notice))
    .then(
      [=](ok_atom) {
        if (answered())
          accepted();
      },
      [=](caf::error& err) {
        if (answered())
          refused(err);
      });
}

// How long a failed message that could be kept nowhere waits before the
// error queue is tried again.
constexpr duration park_delay = std::chrono::seconds(30);

// Holds back a message whose fate is decided but that no error queue or
// file would take, marked (with this endpoint's name) so that it goes
// straight to the error queue when it comes back. Only if the scheduler
// refuses too does it go back to the transport.
void park_for_later(consumer* self) {
  const auto& rt = runtime(self);
  const auto& cur = current(self);
  if (rt.definition().stream) {
    // The scheduler would give a stream's message back to the stream,
    // where every reader would read it again. It stays unsettled instead,
    // behind the saved offset: the reader's next start reads it again and
    // decides again.
    rt.log().move_to_error->error("message {} stays unsettled in the stream read by endpoint "
                                  "'{}'; it is read again when the endpoint starts again",
                                  cur.item.message->message_id, rt.name());
    settle_and_report(self, outcome::requeue);
    return;
  }
  auto copy = std::make_shared<envelope>(
    with_pending_fault(*cur.item.message, *cur.fault, rt.config().limits));
  hand_to_scheduler(
    self, ending_step::error_queue, std::move(copy), park_delay, announcement{},
    [self] { settle_and_report(self, outcome::scheduled); },
    [self](const caf::error&) { settle_and_report(self, outcome::requeue); });
}

void send_to_error_queue(consumer* self) {
  const auto& cur = current(self);
  const auto& rt = runtime(self);
  auto copy = error_queue_copy(rt, *cur.item.message, *cur.fault);
  stamp_fault_trace(*cur.item.message, cur.attempt, cur.attempt_started, copy);
  rt.transport().async_send(cur.fault_queue, std::move(copy), to_self(self, ending_step::error_queue));
}

void on_error_queue(consumer* self, const result<void>& sent) {
  auto& cur = current(self);
  const auto& rt = runtime(self);
  const auto& msg = *cur.item.message;
  const auto& fault = *cur.fault;
  if (sent) {
    const auto& log = rt.log();
    log_line(log, *log.move_to_error, spdlog::level::err,
             {msg.message_id, rt.name(), cur.attempt, fault.exception.type, fault.reason},
             "moving message {} to the error queue '{}' because of an exception {}: {} ({})",
             msg.message_id, cur.fault_queue, log.cut(fault.exception.type),
             log.cut(fault.exception.message), log.cut(fault.reason));
    dead_lettered(self);
    return;
  }
  if (for_now(sent.error())) {
    hold_and_retry(self, ending_step::error_queue, to_string(sent.error()));
    return;
  }
  // Refused for good as it is: the smallest fault headers that still say
  // what happened.
  const auto& log = rt.log();
  log_line(log, *log.move_to_error, spdlog::level::err,
           {msg.message_id, rt.name(), cur.attempt, fault.exception.type, fault.reason},
           "the error queue '{}' refused message {} ({}); trying again with minimal fault headers",
           cur.fault_queue, msg.message_id, log.cut(to_string(sent.error())));
  auto minimal = minimal_error_queue_copy(rt, msg, fault);
  stamp_fault_trace(msg, cur.attempt, cur.attempt_started, minimal);
  rt.transport().async_send(cur.fault_queue, std::move(minimal),
                            to_self(self, ending_step::minimal_error_queue));
}

void on_minimal_error_queue(consumer* self, const result<void>& sent) {
  auto& cur = current(self);
  const auto& rt = runtime(self);
  const auto& msg = *cur.item.message;
  if (sent) {
    const auto& log = rt.log();
    log_line(log, *log.move_to_error, spdlog::level::err,
             {msg.message_id, rt.name(), cur.attempt, cur.fault->exception.type, cur.fault->reason},
             "moved message {} to the error queue '{}' with minimal fault headers: {}",
             msg.message_id, cur.fault_queue, log.cut(cur.fault->reason));
    dead_lettered(self);
    return;
  }
  if (for_now(sent.error())) {
    hold_and_retry(self, ending_step::error_queue, to_string(sent.error()));
    return;
  }
  // Refused for good twice: a local file, so the message is kept somewhere.
  auto file = append_dead_letter(rt.config().dead_letter_directory, rt.name(), msg, *cur.fault);
  if (file) {
    rt.log().move_to_error->error("the error queue '{}' refused message {} again ({}); wrote it to "
                                  "the dead-letter file '{}'",
                                  cur.fault_queue, msg.message_id, to_string(sent.error()), *file);
    dead_lettered(self);
    return;
  }
  // Nowhere to keep it: hold it back rather than let it return at once
  // and fail again in a hot loop.
  rt.log().move_to_error->critical("cannot keep failed message {} anywhere (error queue: {}; file: "
                                   "{})",
                                   msg.message_id, to_string(sent.error()),
                                   to_string(file.error()));
  rt.log().move_to_error->critical("holding message {} for {} before trying its error queue again",
                                   msg.message_id, to_hms(park_delay));
  park_for_later(self);
}

// The skipped event carries the reason, as the skipped queue's header does.
void emit_skipped(consumer* self) {
  const auto& rt = runtime(self);
  const auto& msg = *current(self).item.message;
  rt.emit(event_kind::skipped, msg, [&](bus_event& e) { e.detail = skipped_reason(rt, msg); });
}

void fault_ending(consumer* self, fault_details fault, std::string queue);

void on_skipped_queue(consumer* self, const result<void>& sent) {
  const auto& rt = runtime(self);
  const auto& msg = *current(self).item.message;
  if (!sent && for_now(sent.error())) {
    hold_and_retry(self, ending_step::skipped_queue, to_string(sent.error()));
    return;
  }
  if (!sent) {
    // Refused for good (too large for it, say): waiting would only loop.
    // The error queue takes it, saying why; its ending is claimed already.
    auto& cur = current(self);
    auto reason = skipped_reason(rt, msg) + "; the skipped queue '"
                  + rt.definition().skipped_queue + "' refused it: " + to_string(sent.error());
    rt.log().skipped->error("cannot move message {} to '{}' ({}); it goes to the error queue",
                            msg.message_id, rt.definition().skipped_queue,
                            to_string(sent.error()));
    fault_ending(self, make_fault(rt, cur.item, exception_info{"none", ""}, std::move(reason), 0),
                 {});
    return;
  }
  rt.log().skipped->warn("moved message {} of type '{}' to '{}': endpoint '{}' has no handler for it",
                         msg.message_id, msg.message_type, rt.definition().skipped_queue,
                         rt.name());
  emit_skipped(self);
  settle_and_report(self, outcome::skipped);
}

// Whether the scheduler refused for good: the transport will never hold
// this message (a delay longer than its levels hold). Anything else is for
// now: the broker out of reach, or the scheduler gone (its endpoint starts
// a new one), and the message waits with its slot.
bool scheduler_refused_for_good(const caf::error& err) {
  return err.category() == scheduler_refusal
         && err.code() != refusal_code(errc::transport_failure);
}

std::string refusal_text(consumer* self, const caf::error& err) {
  const auto& context = err.context();
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return self->system().render(err);
}

} // namespace

void retry_now(consumer* self, const immediate_retry& a) {
  const auto& rt = runtime(self);
  auto& cur = current(self);
  const auto& what = cur.last_what;
  rt.counters().immediate_retries.fetch_add(1, std::memory_order_relaxed);
  rt.emit(event_kind::immediate_retry, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.delay = a.delay;
    e.exception_type = what.type;
    e.detail = what.message;
  });
  const auto& log = rt.log();
  log_line(log, *log.immediate_retry, spdlog::level::info,
           {cur.item.message->message_id, rt.name(), cur.attempt, what.type, {}},
           "immediate retry of message {} after {} because of an exception {}: {} (attempt {} "
           "failed)",
           cur.item.message->message_id, to_hms(a.delay), log.cut(what.type), log.cut(what.message),
           cur.attempt);
  self->delayed_send(self, a.delay, retry_atom::value, cur.item.tag);
}

void redeliver_later(consumer* self, const delayed_retry& a) {
  if (!claim_ending(self))
    return;
  const auto& rt = runtime(self);
  auto& cur = current(self);
  const auto& msg = *cur.item.message;
  const auto& what = cur.last_what;
  // The copy carries the history that the policy's limits need, and
  // nothing of a foreign held-back mark.
  auto copy = std::make_shared<envelope>(with_failed_delivery(msg, cur.history, cur.attempt));
  if (cur.history.foreign_fault_pending)
    copy->headers.erase(header::fault_pending);
  const auto& log = rt.log();
  log_line(log, *log.delayed_retry, spdlog::level::warn,
           {msg.message_id, rt.name(), cur.attempt, what.type, {}},
           "delayed retry {} will reschedule message {} after a delay of {} because of an "
           "exception {}: {}",
           copy->delivery_count, msg.message_id, to_hms(a.delay), log.cut(what.type),
           log.cut(what.message));
  // The scheduler raises the event as it accepts the copy: raised here on
  // its answer, it could come after the copy was already back and done.
  auto notice = rt.prepare(event_kind::redelivery_scheduled, msg, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.delay = a.delay;
    e.exception_type = what.type;
    e.detail = "redelivery " + std::to_string(copy->delivery_count);
  });
  cur.redelivery = a;
  hand_to_scheduler(
    self, ending_step::redelivery, std::move(copy), a.delay, announcement(std::move(notice)),
    [self] { settle_and_report(self, outcome::scheduled); },
    [self](const caf::error& err) {
      if (!scheduler_refused_for_good(err)) {
        hold_and_retry(self, ending_step::redelivery, refusal_text(self, err));
        return;
      }
      fail_for_good(self, move_to_error{"the scheduler refused the redelivery: "
                                          + refusal_text(self, err),
                                        {}});
    });
}

void fail_for_good(consumer* self, const move_to_error& a) {
  const auto& cur = current(self);
  end_in_fault(self,
               make_fault(runtime(self), cur.item, cur.last_what, a.reason, cur.attempt - 1),
               a.queue);
}

void end_in_fault(consumer* self, fault_details fault, std::string queue) {
  if (!claim_ending(self))
    return;
  fault_ending(self, std::move(fault), std::move(queue));
}

namespace {

// The fault ending of a delivery whose ending this consumer has claimed:
// discarded if the endpoint discards faulted messages, else the error
// queue (`queue`, or the endpoint's if empty).
void fault_ending(consumer* self, fault_details fault, std::string queue) {
  const auto& rt = runtime(self);
  auto& cur = current(self);
  if (rt.definition().discard_faulted) {
    const auto& log = rt.log();
    log_line(log, *log.discard, spdlog::level::warn,
             {cur.item.message->message_id, rt.name(), cur.attempt, fault.exception.type,
              fault.reason},
             "discarding message {} that failed for good ({}): {}: {}",
             cur.item.message->message_id, log.cut(fault.reason), log.cut(fault.exception.type),
             log.cut(fault.exception.message));
    raise_fault(self, fault);
    emit_end(self, event_kind::discarded, fault);
    settle_and_report(self, outcome::discarded);
    return;
  }
  cur.fault = std::move(fault);
  cur.fault_queue = queue.empty() ? rt.definition().error_queue : std::move(queue);
  send_to_error_queue(self);
}

} // namespace

void drop(consumer* self, const discard& a) {
  if (!claim_ending(self))
    return;
  const auto& rt = runtime(self);
  const auto& cur = current(self);
  const auto& what = cur.last_what;
  const auto& log = rt.log();
  log_line(log, *log.discard, spdlog::level::info,
           {cur.item.message->message_id, rt.name(), cur.attempt, what.type, a.reason},
           "discarding message {} because of an exception {}: {} ({})",
           cur.item.message->message_id, log.cut(what.type), log.cut(what.message),
           log.cut(a.reason));
  rt.emit(event_kind::discarded, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = what.type;
    e.detail = a.reason;
  });
  settle_and_report(self, outcome::discarded);
}

void skip_message(consumer* self) {
  if (!claim_ending(self))
    return;
  const auto& rt = runtime(self);
  const auto& msg = *current(self).item.message;
  if (rt.definition().discard_skipped) {
    rt.log().skipped->info("discarding message {} of type '{}': endpoint '{}' has no handler for it",
                           msg.message_id, msg.message_type, rt.name());
    emit_skipped(self);
    settle_and_report(self, outcome::skipped);
    return;
  }
  rt.transport().async_send(rt.definition().skipped_queue, skipped_copy(rt, msg),
                            to_self(self, ending_step::skipped_queue));
}

void ending_sent(consumer* self, ending_step step, const result<void>& sent) {
  switch (step) {
    case ending_step::error_queue: on_error_queue(self, sent); return;
    case ending_step::minimal_error_queue: on_minimal_error_queue(self, sent); return;
    case ending_step::skipped_queue: on_skipped_queue(self, sent); return;
    case ending_step::outbox: return;     // the outbox's (outbox.hpp)
    case ending_step::redelivery: return; // answered by the scheduler, not the transport
  }
}

void try_again(consumer* self) {
  auto& cur = current(self);
  switch (cur.waiting_for) {
    case ending_step::redelivery: redeliver_later(self, *cur.redelivery); return;
    case ending_step::error_queue:
    case ending_step::minimal_error_queue:
      if (claim_ending(self))
        send_to_error_queue(self);
      return;
    case ending_step::skipped_queue: skip_message(self); return;
    case ending_step::outbox: return; // never waited for with backoff
  }
}

void scheduler_replaced(consumer* self, caf::actor scheduler) {
  self->state.scheduler = std::move(scheduler);
  auto& cur = self->state.current;
  if (!cur || !cur->handing_off)
    return;
  // CAF answers no request whose receiver died of an exception: the hand-off
  // in flight is given up and offered to the new scheduler after the wait.
  auto step = *cur->handing_off;
  cur->handing_off.reset();
  hold_and_retry(self, step, "the scheduler died before it answered");
}

} // namespace bus::detail
