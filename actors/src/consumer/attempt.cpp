#include "consumer/attempt.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/actor_handler.hpp"
#include "bus/consumer_died.hpp"
#include "bus/handler_actor_error.hpp"
#include "consumer/dependency_hold.hpp"
#include "consumer/outbox.hpp"
#include "consumer/outcome.hpp"
#include "consumer/reading.hpp"
#include "consumer/resilience.hpp"
#include "consumer/settling.hpp"
#include "delivery_steps.hpp"
#include "metrics/attempt_timer.hpp"

namespace bus::detail {

namespace {

handler_context context_for(consumer* self) {
  const auto& rt = *self->state.rt;
  const auto& cur = *self->state.current;
  return handler_context(*cur.item.message, rt.registry(), rt.name(), cur.attempt_started, cur.attempt,
                         &rt.run().stop_requested, cur.transaction.get(), &rt.transport(),
                         rt.definition().stream.has_value());
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
    if (!error && ctx.verdict()) // poison() or retry() called, no exception thrown
      error = caught_exception(ctx.verdict());
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

} // namespace

void begin(consumer* self, delivery d, claim_ptr claim, bool throttled, bool probe) {
  if (!take_delivery(self, std::move(d), std::move(claim), throttled, probe))
    return;
  if (held_before_attempt(self))
    return;
  count_first_attempt(self); // a fresh message's first attempt, for the retry budget
  run_attempt(self);
}

void adopt(consumer* self, delivery d, claim_ptr claim, bool throttled, int attempt,
           const std::string& why) {
  if (!take_delivery(self, std::move(d), std::move(claim), throttled, false))
    return;
  self->state.current->attempt = attempt;
  on_failure(self, std::make_exception_ptr(consumer_died(why)));
}

void retry_attempt(consumer* self) {
  if (held_before_attempt(self))
    return;
  auto& cur = self->state.current;
  ++cur->attempt;
  if (ended_as_expired(self))
    return; // expired while it waited for its retry (a custom policy's)
  // The endpoint keeps count, so that a successor goes on from here
  // should this consumer die.
  self->send(self->state.endpoint, retrying_atom::value, cur->item.tag, cur->attempt);
  run_attempt(self);
}

} // namespace bus::detail
