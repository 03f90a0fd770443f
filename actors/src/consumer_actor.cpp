#include "consumer_actor.hpp"

#include <stdexcept>

#include <caf/all.hpp>

#include "bus/actor_handler.hpp"
#include "bus/consumer_died.hpp"
#include "bus/handler_actor_error.hpp"
#include "bus/handler_verdicts.hpp"
#include "bus/header_names.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "bus/servicecontrol.hpp"
#include "attempt_spans.hpp"
#include "consumer_endings.hpp"
#include "consumer_inbox.hpp"
#include "consumer_resilience.hpp"
#include "bus/deadline.hpp"
#include "delivery_steps.hpp"
#include "outgoing.hpp"
#include "metrics/attempt_timer.hpp"

namespace bus::detail {

namespace {

// A rate-limited endpoint counts failed attempts as they happen (immediate
// retries included); a success it learns from the delivery's report.
void report_failed_attempt(consumer* self) {
  if (self->state.rt->definition().rate_limit.consecutive_failures > 0)
    self->send(self->state.endpoint, attempt_atom::value);
}


handler_context context_for(consumer* self) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  return handler_context(*cur.item.message, rt.registry(), rt.name(), cur.attempt_started, cur.attempt,
                         &rt.run().stop_requested, cur.transaction.get());
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
  // NServiceBus tells it, with the handler's own messages.
  if (auto ack = servicecontrol::retry_acknowledgement(handled, rt.now(), new_message_id(),
                                                       rt.name()))
    outbox.push_back(std::move(*ack));
  if (self->state.current->transaction && !commit_attempt(self, outbox))
    return;
  if (claim_ending(self))
    release_outbox(self, std::move(outbox));
}

void run_attempt(consumer* self) {
  // The broker delivers it again after its connection died (while it
  // waited for a retry, say): a handler run now could succeed for nothing.
  if (ended_as_stale(self))
    return;
  auto& cur = *self->state.current;
  cur.attempt_started = self->state.rt->now();
  if (cur.handler->invoke) {
    if (self->state.rt->definition().store && !open_inbox(self))
      return; // handled before, or the store failed
    auto ctx = context_for(self);
    metrics::attempt_timer timer(*self->state.rt, cur.handler, *cur.item.message, cur.attempt,
                                 ctx.now());
    auto error = invoke(*cur.handler, cur.body.object().get(), ctx);
    if (!error)
      error = ctx.verdict(); // poison() or retry() called, no exception thrown
    timer.finish(!error);
    if (error) {
      roll_back_attempt(self);
      on_failure(self, std::move(error));
    }
    else
      on_success(self, ctx);
    return;
  }
  // Served by a user's actor: ask it, and keep the slot until it answers.
  const auto& target = *cur.handler->via_actor;
  auto tag = cur.item.tag;
  auto still_current = [=] { return self->state.current && self->state.current->item.tag == tag; };
  auto succeeded = [=] {
    if (!still_current())
      return;
    auto ctx = context_for(self);
    on_success(self, ctx);
  };
  self->request(target.handler, target.timeout, target.make_request(cur.body.object().get()))
    .then([=] { succeeded(); },
          [=](caf::error& err) {
            // CAF 0.17 has no catch-all response handler for event-based
            // actors: a reply other than the empty one arrives as
            // unexpected_response. A reply is a reply: success.
            if (err == caf::sec::unexpected_response) {
              succeeded();
              return;
            }
            if (still_current())
              on_failure(self, std::make_exception_ptr(
                                 handler_actor_error(self->system().render(err))));
          });
}


// Ends the current delivery in the error queue before any handler ran: it
// cannot be read (too large, an envelope that does not parse). No policy
// applies; its fault headers name an Exception that says `why`.
template <class Exception>
void fail_unread(consumer* self, const std::string& why) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
  cur.last_exception = caught_exception(std::make_exception_ptr(Exception(why)));
  cur.last_what = cur.last_exception.describe();
  fail_for_good(self, move_to_error{why, {}});
}

// A message with no type this endpoint handles, as a producer that is not
// a bus sent it: unwrapped from MassTransit's envelope, or read from
// NServiceBus's headers, if the endpoint reads those and it is one; and
// named by the endpoint's foreign_types mapping if it still has no type the
// endpoint handles. What it became replaces it for
// this attempt and any redelivery after it. False if it ended here: a
// MassTransit envelope or NServiceBus header that does not parse goes to
// the error queue, as a body that does not decode does.
bool read_foreign(consumer* self) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  const auto& received = *cur.item.message;
  std::optional<envelope> unwrapped;
  const auto* names = rt.definition().masstransit.get();
  if (names && received.headers.find(header::amqp_content_type) == masstransit::content_type) {
    auto read = masstransit::read_envelope(received, *names);
    if (!read) {
      fail_unread<message_deserialization_error>(self, read.error().message);
      return false;
    }
    // Its body is the message now: never unwrapped twice.
    read->headers.set(header::amqp_content_type, "application/json");
    read->headers.erase(header::wire_error);
    unwrapped = std::move(*read);
  } else if (const auto* nsb = rt.definition().nservicebus.get();
             nsb && nservicebus::is_nservicebus(received)) {
    auto read = nservicebus::read_message(received, *nsb);
    if (!read) {
      fail_unread<message_deserialization_error>(self, read.error().message);
      return false;
    }
    unwrapped = std::move(*read);
  }
  const auto& msg = unwrapped ? *unwrapped : received;
  auto type = msg.message_type;
  const auto* handler = rt.find_handler(type);
  if (!handler) {
    auto named = foreign_type(rt, msg);
    if (!named.empty() && (handler = rt.find_handler(named)))
      type = std::move(named);
  }
  if (!handler && !unwrapped)
    return true; // skipped as it came
  auto now_read = std::make_shared<envelope>(unwrapped ? std::move(*unwrapped) : received);
  if (handler && now_read->message_type.empty())
    now_read->headers.erase(header::wire_error); // a transport's note of the missing type
  now_read->message_type = std::move(type);
  cur.item.message = std::move(now_read);
  cur.handler = handler;
  return true;
}

// Makes `d` the current delivery and readies it for its handler. Returns
// false if it ends here already: a held-back fault, a message too large,
// no handler, a body that does not decode.
bool take(consumer* self, delivery d, claim_ptr claim, bool throttled, bool probe = false) {
  const auto& rt = *self->state.rt;
  auto& cur = self->state.current.emplace();
  cur.item = std::move(d);
  cur.claim = std::move(claim);
  cur.throttled = throttled;
  cur.attempt_started = rt.now(); // run_attempt() sets it again as the handler starts
  cur.probe = probe;
  if (ended_as_stale(self))
    return false; // waited for a slot while its connection died: not run at all
  if (auto fresh = servicecontrol::as_fresh_attempt(*cur.item.message)) {
    rt.log().endpoint->info("message {} on endpoint '{}' was retried from the error queue by "
                            "ServiceControl: it starts over, with a fresh retry budget",
                            fresh->message_id, rt.name());
    cur.item.message = std::make_shared<envelope>(std::move(*fresh));
  }
  const auto& msg = *cur.item.message;
  cur.handler = rt.find_handler(msg.message_type);
  // Its past, read once with bounds: headers from outside the process.
  cur.history = read_delivery_history(msg, rt.name(), rt.now());
  for (const auto& note : cur.history.notes)
    rt.log().endpoint->warn("message {} on endpoint '{}': {}", msg.message_id, rt.name(), note);
  if (cur.history.pending_fault) {
    // Held back here earlier because no error queue would take it: its fate
    // is decided; the error queue is tried again, without the handler. (A
    // mark from elsewhere is foreign: the handler runs as for any message.)
    auto fault = *cur.history.pending_fault;
    fault.at = rt.now();
    // Typed again, so that its fault<T> is raised as it ends.
    if (auto body = rt.registry().ensure_typed(msg.message_type, msg.body))
      cur.body = std::move(*body);
    auto copy = std::make_shared<envelope>(msg);
    copy->headers.erase(header::fault_pending);
    cur.item.message = std::move(copy);
    end_in_fault(self, std::move(fault), {});
    return false;
  }
  if (auto limit = rt.definition().max_message_bytes;
      limit > 0 && msg.body.text_size() > limit) {
    fail_unread<message_too_large>(self, "the message has " + std::to_string(msg.body.text_size())
                                           + " bytes, more than the endpoint's maximum of "
                                           + std::to_string(limit));
    return false;
  }
  // From here on the message may be what read_foreign made of it.
  if (!cur.handler && !read_foreign(self))
    return false;
  if (!cur.handler) {
    skip_message(self);
    return false;
  }
  const auto& readied = *cur.item.message;
  auto body = rt.registry().ensure_typed(readied.message_type, readied.body);
  if (!body) {
    // Unrecoverable whatever the rules say: decide() sends it to the error queue.
    on_failure(self, std::make_exception_ptr(message_deserialization_error(body.error().message)));
    return false;
  }
  cur.body = std::move(*body);
  return !ended_as_expired(self); // an expired message never reaches its handler
}

// Gives the current delivery back to the endpoint's waiting line,
// unsettled and with no attempt spent against its policy: a dependency it
// needs is down. The endpoint holds it until the dependency recovers.
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

// Before an attempt that is not a probe: the endpoint may have handed the
// delivery over (or scheduled its retry) just before a breaker opened.
bool held_before_attempt(consumer* self) {
  const auto& rt = *self->state.rt;
  if (rt.dependencies().empty() || self->state.current->probe
      || rt.dependencies_closed())
    return false;
  hold_back(self, "a dependency breaker of the endpoint is open; not attempted");
  return true;
}

// A failure that a rule counts against a dependency: the breaker hears of
// it first. If the breaker is (now) open, or the rule has nothing else to
// say, the message goes back unharmed instead of down its policy's chain.
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

void begin(consumer* self, delivery d, claim_ptr claim, bool throttled, bool probe = false) {
  if (!take(self, std::move(d), std::move(claim), throttled, probe))
    return;
  if (held_before_attempt(self))
    return;
  count_first_attempt(self); // a fresh message's first attempt, for the retry budget
  run_attempt(self);
}

// Takes over a delivery whose consumer died during `attempt`: that attempt
// failed, and the policy decides what follows, as for an exception.
void adopt(consumer* self, delivery d, claim_ptr claim, bool throttled, int attempt,
           const std::string& why) {
  if (!take(self, std::move(d), std::move(claim), throttled))
    return;
  self->state.current->attempt = attempt;
  on_failure(self, std::make_exception_ptr(consumer_died(why)));
}

// Whether the message event for a completion or timer is still the
// current delivery's (a stop may have taken it back meanwhile).
bool is_current(consumer* self, std::uint64_t tag) {
  auto& cur = self->state.current;
  if (!cur || cur->item.tag != tag)
    return false;
  if (cur->claim->taken_back()) {
    cur.reset(); // a stop gave it back while this consumer waited
    return false;
  }
  return true;
}

} // namespace

void on_failure(consumer* self, std::exception_ptr error) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
  report_failed_attempt(self);
  // Rethrowing is the only way to look into an exception_ptr, and it is
  // costly: looked into once here; the poison check, the description and
  // the policy's rules all read what it saw.
  cur.last_exception = caught_exception(std::move(error));
  cur.last_what = cur.last_exception.describe();
  rt.status().exceptions.remember(cur.last_what.type, cur.item.message->message_type,
                                  cur.last_exception.pointer());
  rt.emit(event_kind::failed, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = cur.last_what.type;
    e.detail = cur.last_what.message;
  });
  if (cur.last_exception.is<poison_message>()) {
    move_to_error poisoned{"the handler marked the message as poison", {}};
    report_failed(self, poisoned);
    fail_for_good(self, poisoned);
    return;
  }
  if (held_for_dependency(self))
    return;
  const auto& msg = *cur.item.message;
  auto context = error_context_for(cur.last_exception);
  context.immediate_attempts = cur.attempt;
  context.delivery_count = msg.delivery_count;
  context.total_attempts = cur.history.total_attempts(cur.attempt);
  context.first_failure = cur.history.first_failure;
  context.now = rt.now();
  context.message = &msg;
  context.expires_at = expires_at(msg);
  auto decided = [&] {
    if (!cur.throttled)
      return decide(*cur.handler->recoverability, context, self->state.jitter);
    // Rate limited: one attempt per wait, so no immediate retries; the
    // policy goes on to its next tier.
    auto throttled = *cur.handler->recoverability;
    throttled.options.available.immediate_retries = false;
    return decide(throttled, context, self->state.jitter);
  }();
  decided = charge_retry(self, std::move(decided), context);
  report_failed(self, decided);
  std::visit(
    [&](const auto& a) {
      using kind = std::decay_t<decltype(a)>;
      if constexpr (std::is_same_v<kind, immediate_retry> || std::is_same_v<kind, delayed_retry>)
        if (a.clamped_from)
          rt.log().delayed_retry->warn("the policy asked for a delay of {} for message {}; "
                                       "waiting the longest delay the bus schedules, {}, instead",
                                       to_hms(*a.clamped_from), msg.message_id, to_hms(a.delay));
      if constexpr (std::is_same_v<kind, immediate_retry>)
        retry_now(self, a);
      else if constexpr (std::is_same_v<kind, delayed_retry>)
        redeliver_later(self, a);
      else if constexpr (std::is_same_v<kind, move_to_error>)
        fail_for_good(self, a);
      else if constexpr (std::is_same_v<kind, discard>)
        drop(self, a);
      else
        static_assert(!sizeof(kind), "every recoverability action must be carried out");
    },
    decided);
}

void succeed(consumer* self) {
  const auto& cur = *self->state.current;
  report_handled(self);
  self->state.rt->emit(event_kind::handled, *cur.item.message,
                       [&](bus_event& e) { e.attempt = cur.attempt; });
  settle_and_report(self, outcome::handled);
}

caf::behavior consumer_actor(consumer* self, endpoint_runtime_ptr rt, caf::actor endpoint,
                             caf::actor scheduler, std::shared_ptr<ready_line> ready) {
  auto& st = self->state;
  st.rt = std::move(rt);
  st.endpoint = std::move(endpoint);
  st.scheduler = std::move(scheduler);
  st.ready = std::move(ready);
  const auto& seed = st.rt->config().jitter_seed;
  // A fixed seed still differs per consumer (its actor id), so that slots
  // do not jitter in lockstep.
  st.jitter.seed(seed ? *seed + self->id() : std::random_device{}());
  return {
    [=](run_atom, delivery& d, claim_ptr& claim, bool throttled) {
      begin(self, std::move(d), std::move(claim), throttled);
    },
    // Taken from the ready line as the one before ended, and named in its
    // report: the endpoint sends nothing else to a consumer it knows busy.
    [=](next_atom) {
      auto& st = self->state;
      if (st.current || !st.next)
        return;
      auto n = std::move(*st.next);
      st.next.reset();
      begin(self, std::move(n.item), std::move(n.claim), false);
    },
    // The single probe of a half-open dependency breaker.
    [=](probe_atom, delivery& d, claim_ptr& claim, bool throttled) {
      begin(self, std::move(d), std::move(claim), throttled, true);
    },
    [=](adopt_atom, delivery& d, claim_ptr& claim, bool throttled, int attempt,
        const std::string& why) {
      adopt(self, std::move(d), std::move(claim), throttled, attempt, why);
    },
    [=](sent_atom, std::uint64_t tag, ending_step step, result<void>& sent) {
      if (is_current(self, tag))
        on_sent(self, step, std::move(sent));
    },
    [=](again_atom, std::uint64_t tag) {
      if (is_current(self, tag))
        try_again(self);
    },
    [=](retry_atom, std::uint64_t tag) {
      if (!is_current(self, tag))
        return;
      if (held_before_attempt(self))
        return;
      auto& cur = self->state.current;
      ++cur->attempt;
      if (ended_as_expired(self))
        return; // expired while it waited for its retry (a custom policy's)
      // The endpoint keeps count, so that a successor goes on from here
      // should this consumer die.
      self->send(self->state.endpoint, retrying_atom::value, tag, cur->attempt);
      run_attempt(self);
    },
    // A new scheduler, after the endpoint noticed the old one died.
    [=](scheduler_atom, caf::actor& scheduler) {
      scheduler_replaced(self, std::move(scheduler));
    },
  };
}

} // namespace bus::detail
