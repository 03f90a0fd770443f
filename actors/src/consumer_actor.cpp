#include "consumer_actor.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/all.hpp>

#include "bus/handler_actor_error.hpp"
#include "bus/actor_handler.hpp"
#include "delivery_steps.hpp"

namespace bus::detail {

namespace {

using consumer = caf::stateful_actor<consumer_state>;

void report(consumer* self, const delivery& d, outcome result) {
  self->send(self->state.endpoint, done_atom::value, d.tag, result);
}

// What follows a failed attempt. Issue 2's runtime has no policy yet: every
// failure is terminal and goes to the error queue.
void on_failure(consumer* self, const delivery& d, std::exception_ptr error, int attempt) {
  const auto& rt = *self->state.rt;
  rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
  auto fault = make_fault(rt, d, describe(error), "the handler failed", attempt - 1);
  report(self, d, move_to_error(rt, d, fault));
}

void on_success(consumer* self, const delivery& d, handler_context& ctx, int attempt) {
  const auto& rt = *self->state.rt;
  if (auto released = release(rt, ctx.take_outbox()); !released) {
    // The handler's messages could not all be sent: the attempt failed.
    on_failure(self, d, std::make_exception_ptr(std::runtime_error(to_string(released.error()))),
               attempt);
    return;
  }
  report(self, d, outcome::handled);
}

void attempt(consumer* self, const delivery& d, int attempt_no) {
  const auto& rt = *self->state.rt;
  const auto& msg = *d.message;
  const auto* slot = rt.find_handler(msg.message_type);
  if (!slot) {
    report(self, d, skip(rt, d));
    return;
  }
  auto body = rt.registry().ensure_typed(msg.message_type, msg.body);
  if (!body) {
    // A body that cannot be decoded never will be: no retry helps.
    auto fault = make_fault(rt, d, exception_info{"bus::deserialization_error", body.error().message},
                            "the body cannot be deserialized", 0);
    rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
    report(self, d, move_to_error(rt, d, fault));
    return;
  }
  if (slot->invoke) {
    handler_context ctx(msg, rt.registry(), rt.name(), rt.now(), attempt_no);
    if (auto error = invoke(*slot, body->object().get(), ctx))
      on_failure(self, d, std::move(error), attempt_no);
    else
      on_success(self, d, ctx, attempt_no);
    return;
  }
  // Served by a user's actor: ask it, and keep the slot until it answers.
  const auto& target = *slot->via_actor;
  auto succeed = [=] {
    handler_context ctx(*d.message, self->state.rt->registry(), self->state.rt->name(),
                        self->state.rt->now(), attempt_no);
    on_success(self, d, ctx, attempt_no);
  };
  self->request(target.handler, target.timeout, target.make_request(body->object().get()))
    .then([=] { succeed(); },
          [=](caf::error& err) {
            // CAF 0.17 has no catch-all response handler for event-based
            // actors: a reply other than the empty one arrives as
            // unexpected_response. A reply is a reply: success.
            if (err == caf::sec::unexpected_response) {
              succeed();
              return;
            }
            on_failure(self, d,
                       std::make_exception_ptr(handler_actor_error(self->system().render(err))),
                       attempt_no);
          });
}

} // namespace

caf::behavior consumer_actor(consumer* self, endpoint_runtime_ptr rt, caf::actor endpoint) {
  self->state.rt = std::move(rt);
  self->state.endpoint = std::move(endpoint);
  return {
    [=](run_atom, const delivery& d) { attempt(self, d, 1); },
  };
}

} // namespace bus::detail
