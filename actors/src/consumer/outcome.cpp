#include "consumer/outcome.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "bus/deadline.hpp"
#include "bus/handler_verdicts.hpp"
#include "bus/policy/decide.hpp"
#include "consumer/attempt_spans.hpp"
#include "consumer/dependency_hold.hpp"
#include "consumer/endings.hpp"
#include "consumer/resilience.hpp"
#include "consumer/settling.hpp"

namespace bus::detail {

namespace {

// A rate-limited endpoint counts failed attempts as they happen (immediate
// retries included); a success it learns from the delivery's report.
void report_failed_attempt(consumer* self) {
  if (self->state.rt->definition().rate_limit.consecutive_failures > 0)
    self->send(self->state.endpoint, attempt_atom::value);
}

} // namespace

void on_failure(consumer* self, std::exception_ptr error) {
  // Rethrowing is the only way to look into an exception_ptr, and it is
  // costly: looked into once here.
  on_failure(self, caught_exception(std::move(error)));
}

void on_failure(consumer* self, caught_exception error) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  rt.counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
  report_failed_attempt(self);
  // The poison check, the description and the policy's rules all read
  // what was seen of the exception once.
  cur.last_exception = std::move(error);
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

} // namespace bus::detail
