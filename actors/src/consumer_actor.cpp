#include "consumer_actor.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <caf/all.hpp>

#include "bus/actor_handler.hpp"
#include "bus/consumer_died.hpp"
#include "bus/handler_actor_error.hpp"
#include "bus/handler_verdicts.hpp"
#include "bus/header_names.hpp"
#include "delivery_steps.hpp"
#include "scheduler_actor.hpp"

namespace bus::detail {

namespace {

using consumer = caf::stateful_actor<consumer_state>;

void run_attempt(consumer* self);

// -- what a message carries across redeliveries -------------------------------

template <class Int>
std::optional<Int> int_header(const envelope& msg, std::string_view name) {
  auto text = msg.headers.find(name);
  Int value{};
  if (!text || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc())
    return std::nullopt;
  return value;
}

// Failed attempts of earlier deliveries.
int failures_before(const envelope& msg) {
  return int_header<int>(msg, header::failed_attempts).value_or(0);
}

time_point first_failure(const envelope& msg, time_point now) {
  auto ms = int_header<std::int64_t>(msg, header::first_failure_at);
  auto at = ms ? checked_from_unix_ms(*ms) : std::nullopt;
  return at ? *at : now;
}

// -- outcomes -----------------------------------------------------------------

void report(consumer* self, outcome result) {
  auto tag = self->state.current->item.tag;
  self->state.current.reset();
  self->send(self->state.endpoint, done_atom::value, tag, result);
}

fault_details fault_of(consumer* self, std::string reason) {
  const auto& cur = *self->state.current;
  return make_fault(*self->state.rt, cur.item, cur.last_what, std::move(reason),
                    cur.attempt - 1);
}

// -- carrying out the decision ------------------------------------------------

void retry_now(consumer* self, const immediate_retry& a) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  const auto& what = cur.last_what;
  rt.counters().immediate_retries.fetch_add(1, std::memory_order_relaxed);
  rt.emit(event_kind::immediate_retry, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.delay = a.delay;
    e.exception_type = what.type;
    e.detail = what.message;
  });
  rt.log().immediate_retry->info(
    "immediate retry of message {} after {} because of an exception {}: {} (attempt {} failed)",
    cur.item.message->message_id, to_hms(a.delay), what.type, what.message, cur.attempt);
  self->delayed_send(self, a.delay, retry_atom::value, cur.item.tag);
}

// Tells the observer how a message ended after a failure.
void emit_end(consumer* self, event_kind kind, const fault_details& fault) {
  const auto& cur = *self->state.current;
  self->state.rt->emit(kind, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = fault.exception.type;
    e.detail = fault.reason;
  });
}

// How long a failed message that could be kept nowhere waits before the
// error queue is tried again.
constexpr duration park_delay = std::chrono::seconds(30);

// Holds back a message whose fate is decided but that no error queue or
// file would take, marked so that it goes straight to the error queue when
// it comes back. Only if the scheduler refuses too does it go back to the
// transport.
void park_for_later(consumer* self, const fault_details& fault) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  auto copy = std::make_shared<envelope>(with_fault_headers(*cur.item.message, fault,
                                                            rt.config().limits));
  copy->headers.set(header::fault_pending, "1");
  rt.log().move_to_error->critical("holding message {} for {} before trying its error queue again",
                                   cur.item.message->message_id, to_hms(park_delay));
  auto tag = cur.item.tag;
  self->request(self->state.scheduler, caf::infinite, schedule_atom::value, std::move(copy),
                park_delay, announcement{})
    .then(
      [=](ok_atom) {
        if (self->state.current && self->state.current->item.tag == tag)
          report(self, outcome::scheduled);
      },
      [=](caf::error&) {
        if (self->state.current && self->state.current->item.tag == tag)
          report(self, outcome::requeue);
      });
}

// Ends a message that failed for good: the error queue (or discard, by
// option), and fault<T>.
void end_in_fault(consumer* self, const fault_details& fault, const std::string& queue) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  if (rt.definition().discard_faulted) {
    rt.log().discard->warn("discarding message {} that failed for good ({}): {}: {}",
                           cur.item.message->message_id, fault.reason, fault.exception.type,
                           fault.exception.message);
    raise_fault(rt, cur.item, cur.body, fault);
    emit_end(self, event_kind::discarded, fault);
    report(self, outcome::discarded);
    return;
  }
  auto result = park_on_error_queue(rt, cur.item, fault, queue);
  if (result == outcome::dead_lettered) {
    raise_fault(rt, cur.item, cur.body, fault);
    emit_end(self, event_kind::dead_lettered, fault);
  } else if (result == outcome::requeue) {
    // Kept nowhere: hold it back rather than let it return at once and
    // fail again in a hot loop.
    park_for_later(self, fault);
    return;
  }
  report(self, result);
}

void fail_for_good(consumer* self, const move_to_error& a) {
  end_in_fault(self, fault_of(self, a.reason), a.queue);
}

// Whether the scheduler refused for now only: the transport could not
// reach the broker. The message is then kept, never moved to the error
// queue, since its original delivery cannot be acknowledged either and
// would come back to end a second time.
bool refused_for_now(const caf::error& err) {
  return err && err.category() == scheduler_refusal
         && err.code() == refusal_code(errc::transport_failure);
}

std::string refusal_text(consumer* self, const caf::error& err) {
  const auto& context = err.context();
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return self->system().render(err);
}

// Holds the slot and asks the scheduler again later, 1 s doubling to 30 s:
// an outage costs time, not the message. A stop gives it back to the
// queue after the drain timeout.
void reschedule_after_refusal(consumer* self, const std::string& why) {
  auto& cur = *self->state.current;
  auto wait = std::chrono::seconds(1) * (1 << std::min(cur.scheduler_refusals, 5));
  auto pause = std::min<duration>(wait, std::chrono::seconds(30));
  ++cur.scheduler_refusals;
  self->state.rt->log().delayed_retry->warn(
    "cannot hand message {} over for its redelivery ({}); keeping it and trying again in {}",
    cur.item.message->message_id, why, to_hms(pause));
  self->delayed_send(self, pause, reschedule_atom::value, cur.item.tag);
}

void redeliver_later(consumer* self, const delayed_retry& a) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  const auto& msg = *cur.item.message;
  const auto& what = cur.last_what;
  // The copy carries the history that the policy's limits need.
  auto copy = std::make_shared<envelope>(msg);
  copy->delivery_count += 1;
  copy->headers.set(header::first_failure_at,
                    std::to_string(to_unix_ms(first_failure(msg, rt.now()))));
  copy->headers.set(header::failed_attempts, std::to_string(failures_before(msg) + cur.attempt));
  rt.log().delayed_retry->warn(
    "delayed retry {} will reschedule message {} after a delay of {} because of an exception {}: {}",
    copy->delivery_count, msg.message_id, to_hms(a.delay), what.type, what.message);
  // The scheduler raises the event as it accepts the copy: raised here on
  // its answer, it could come after the copy was already back and done.
  auto notice = rt.prepare(event_kind::redelivery_scheduled, msg, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.delay = a.delay;
    e.exception_type = what.type;
    e.detail = "redelivery " + std::to_string(copy->delivery_count);
  });
  auto tag = cur.item.tag;
  cur.redelivery = a;
  self->request(self->state.scheduler, caf::infinite, schedule_atom::value, std::move(copy), a.delay,
                announcement(std::move(notice)))
    .then(
      [=](ok_atom) {
        if (self->state.current && self->state.current->item.tag == tag)
          report(self, outcome::scheduled);
      },
      [=](caf::error& err) {
        if (!self->state.current || self->state.current->item.tag != tag)
          return;
        if (refused_for_now(err)) {
          reschedule_after_refusal(self, refusal_text(self, err));
          return;
        }
        fail_for_good(self, move_to_error{"the scheduler refused the redelivery: "
                                            + refusal_text(self, err),
                                          {}});
      });
}

void drop(consumer* self, const discard& a) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  const auto& what = cur.last_what;
  rt.log().discard->info("discarding message {} because of an exception {}: {} ({})",
                         cur.item.message->message_id, what.type, what.message, a.reason);
  rt.emit(event_kind::discarded, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = what.type;
    e.detail = a.reason;
  });
  report(self, outcome::discarded);
}

// -- the attempt --------------------------------------------------------------

// Every attempt's result goes to the circuit breaker, if there is one.
void tell_breaker(consumer* self, bool succeeded) {
  if (self->state.breaker)
    self->send(self->state.breaker, attempt_atom::value, succeeded);
}

bool is_poison(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const poison_message&) {
    return true;
  } catch (...) {
    return false;
  }
}

void on_failure(consumer* self, std::exception_ptr error) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
  tell_breaker(self, false);
  cur.last_exception = std::move(error);
  // Rethrowing is the only way to look into an exception_ptr, and it is
  // costly: described once here, read by every step that follows.
  cur.last_what = describe(cur.last_exception);
  rt.emit(event_kind::failed, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = cur.last_what.type;
    e.detail = cur.last_what.message;
  });
  if (is_poison(cur.last_exception)) {
    fail_for_good(self, move_to_error{"the handler marked the message as poison", {}});
    return;
  }
  const auto& msg = *cur.item.message;
  auto now = rt.now();
  error_context context;
  context.exception = cur.last_exception;
  context.immediate_attempts = cur.attempt;
  context.delivery_count = msg.delivery_count;
  context.total_attempts = failures_before(msg) + cur.attempt;
  context.first_failure = first_failure(msg, now);
  context.now = now;
  context.message = &msg;
  auto decided = [&] {
    if (!cur.throttled)
      return decide(*cur.handler->recoverability, context, self->state.jitter);
    // Rate limited: one attempt per wait, so no immediate retries; the
    // policy goes on to its next tier.
    auto throttled = *cur.handler->recoverability;
    throttled.options.available.immediate_retries = false;
    return decide(throttled, context, self->state.jitter);
  }();
  std::visit(
    [&](const auto& a) {
      using kind = std::decay_t<decltype(a)>;
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

void on_success(consumer* self, handler_context& ctx) {
  if (auto released = release(*self->state.rt, ctx.take_outbox()); !released) {
    // The handler's messages could not all be sent: the attempt failed.
    on_failure(self, std::make_exception_ptr(std::runtime_error(to_string(released.error()))));
    return;
  }
  tell_breaker(self, true);
  const auto& cur = *self->state.current;
  self->state.rt->emit(event_kind::handled, *cur.item.message,
                       [&](bus_event& e) { e.attempt = cur.attempt; });
  report(self, outcome::handled);
}

handler_context context_for(consumer* self) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  return handler_context(*cur.item.message, rt.registry(), rt.name(), rt.now(), cur.attempt);
}

void run_attempt(consumer* self) {
  auto& cur = *self->state.current;
  if (cur.handler->invoke) {
    auto ctx = context_for(self);
    auto error = invoke(*cur.handler, cur.body.object().get(), ctx);
    if (!error)
      error = ctx.verdict(); // poison() or retry() called, no exception thrown
    if (error)
      on_failure(self, std::move(error));
    else
      on_success(self, ctx);
    return;
  }
  // Served by a user's actor: ask it, and keep the slot until it answers.
  const auto& target = *cur.handler->via_actor;
  auto tag = cur.item.tag;
  auto still_current = [=] { return self->state.current && self->state.current->item.tag == tag; };
  auto succeed = [=] {
    if (!still_current())
      return;
    auto ctx = context_for(self);
    on_success(self, ctx);
  };
  self->request(target.handler, target.timeout, target.make_request(cur.body.object().get()))
    .then([=] { succeed(); },
          [=](caf::error& err) {
            // CAF 0.17 has no catch-all response handler for event-based
            // actors: a reply other than the empty one arrives as
            // unexpected_response. A reply is a reply: success.
            if (err == caf::sec::unexpected_response) {
              succeed();
              return;
            }
            if (still_current())
              on_failure(self, std::make_exception_ptr(
                                 handler_actor_error(self->system().render(err))));
          });
}

// Makes `d` the current delivery and readies it for its handler. Returns
// false if it ended here already: a held-back fault, a message too large,
// no handler, a body that does not decode.
bool take(consumer* self, delivery d, bool throttled) {
  const auto& rt = *self->state.rt;
  auto& cur = self->state.current.emplace();
  cur.item = std::move(d);
  cur.throttled = throttled;
  const auto& msg = *cur.item.message;
  if (msg.headers.contains(header::fault_pending)) {
    // Held back earlier because no error queue would take it: its fate is
    // decided; try the error queue again, without the handler.
    auto fault = fault_from_headers(msg);
    fault.at = rt.now();
    auto copy = std::make_shared<envelope>(msg);
    copy->headers.erase(header::fault_pending);
    cur.item.message = std::move(copy);
    end_in_fault(self, fault, {});
    return false;
  }
  if (auto limit = rt.definition().max_message_bytes;
      limit > 0 && msg.body.text_size() > limit) {
    auto why = "the message has " + std::to_string(msg.body.text_size())
               + " bytes, more than the endpoint's maximum of " + std::to_string(limit);
    rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
    cur.last_exception = std::make_exception_ptr(message_too_large(why));
    cur.last_what = describe(cur.last_exception);
    fail_for_good(self, move_to_error{why, {}});
    return false;
  }
  cur.handler = rt.find_handler(msg.message_type);
  if (!cur.handler) {
    auto result = skip(rt, cur.item);
    if (result == outcome::skipped)
      rt.emit(event_kind::skipped, msg);
    report(self, result);
    return false;
  }
  auto body = rt.registry().ensure_typed(msg.message_type, msg.body);
  if (!body) {
    // Unrecoverable whatever the rules say: decide() sends it to the error queue.
    on_failure(self, std::make_exception_ptr(message_deserialization_error(body.error().message)));
    return false;
  }
  cur.body = std::move(*body);
  return true;
}

void begin(consumer* self, delivery d, bool throttled) {
  if (take(self, std::move(d), throttled))
    run_attempt(self);
}

// Takes over a delivery whose consumer died during `attempt`: that attempt
// failed, and the policy decides what follows, as for an exception.
void adopt(consumer* self, delivery d, bool throttled, int attempt, const std::string& why) {
  if (!take(self, std::move(d), throttled))
    return;
  self->state.current->attempt = attempt;
  on_failure(self, std::make_exception_ptr(consumer_died(why)));
}

} // namespace

caf::behavior consumer_actor(consumer* self, endpoint_runtime_ptr rt, caf::actor endpoint,
                             caf::actor scheduler, caf::actor breaker) {
  auto& st = self->state;
  st.rt = std::move(rt);
  st.endpoint = std::move(endpoint);
  st.scheduler = std::move(scheduler);
  st.breaker = std::move(breaker);
  const auto& seed = st.rt->config().jitter_seed;
  // A fixed seed still differs per consumer (its actor id), so that slots
  // do not jitter in lockstep.
  st.jitter.seed(seed ? *seed + self->id() : std::random_device{}());
  return {
    [=](run_atom, delivery& d, bool throttled) { begin(self, std::move(d), throttled); },
    [=](adopt_atom, delivery& d, bool throttled, int attempt, const std::string& why) {
      adopt(self, std::move(d), throttled, attempt, why);
    },
    [=](reschedule_atom, std::uint64_t tag) {
      auto& cur = self->state.current;
      if (cur && cur->item.tag == tag && cur->redelivery)
        redeliver_later(self, *cur->redelivery);
    },
    [=](retry_atom, std::uint64_t tag) {
      auto& cur = self->state.current;
      if (!cur || cur->item.tag != tag)
        return;
      ++cur->attempt;
      // The endpoint keeps count, so that a successor goes on from here
      // should this consumer die.
      self->send(self->state.endpoint, retrying_atom::value, tag, cur->attempt);
      run_attempt(self);
    },
  };
}

} // namespace bus::detail
