#include "consumer/resilience.hpp"

#include "bus/deadline.hpp"
#include "bus/policy/deadline.hpp"
#include "bus/policy/retry_budget.hpp"
#include "consumer/endings.hpp"
#include "consumer/settling.hpp"
#include "delivery_steps.hpp"

namespace bus::detail {

void count_first_attempt(consumer* self) {
  const auto& rt = *self->state.rt;
  const auto& budget = rt.config().budget;
  if (budget && self->state.current->item.message->delivery_count == 0)
    budget->record_first_attempt(rt.now());
}

action charge_retry(consumer* self, action decided, const error_context& context) {
  const auto& rt = *self->state.rt;
  const auto& budget = rt.config().budget;
  if (!budget || !is_retry(decided) || budget->try_spend_retry(context.now))
    return decided;
  auto& cur = *self->state.current;
  rt.counters().retries_denied.fetch_add(1, std::memory_order_relaxed);
  auto instead = when_budget_spent(*cur.handler->recoverability, context, decided,
                                   self->state.jitter);
  const auto& settings = budget->settings();
  rt.log().retry_budget->warn(
    "{} of endpoint '{}' spent: {} of message {} refused ({} {}: {}); instead: {}",
    settings.name.empty() ? std::string("the retry budget") : "retry budget '" + settings.name + "'",
    rt.name(), describe(decided), cur.item.message->message_id, "exception", cur.last_what.type,
    cur.last_what.message, describe(instead));
  rt.emit(event_kind::retry_denied, *cur.item.message, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.exception_type = cur.last_what.type;
    e.detail = std::string(to_string(settings.fallback)) + ": " + describe(instead);
  });
  return instead;
}

bool ended_as_expired(consumer* self) {
  const auto& rt = *self->state.rt;
  auto& cur = *self->state.current;
  const auto& msg = *cur.item.message;
  const auto at = expires_at(msg);
  const auto now = rt.now();
  if (!at || now < *at)
    return false;
  rt.counters().expired.fetch_add(1, std::memory_order_relaxed);
  // No absolute times: the same run on virtual time says the same words.
  const auto why = "the message expired " + to_hms(std::chrono::duration_cast<duration>(now - *at))
                   + " before attempt " + std::to_string(cur.attempt) + " (bus-expires-at)";
  rt.emit(event_kind::expired, msg, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.detail = why;
  });
  if (cur.handler->recoverability->options.expired_messages == expired_action::dead_letter) {
    cur.last_what = exception_info{"bus::message_expired", why};
    end_in_fault(self,
                 make_fault(rt, cur.item, cur.last_what, std::string(expired_reason),
                            cur.attempt - 1),
                 {});
    return true;
  }
  if (!claim_ending(self))
    return true;
  rt.log().discard->info("discarding message {} on endpoint '{}': {}", msg.message_id, rt.name(),
                         why);
  rt.emit(event_kind::discarded, msg, [&](bus_event& e) {
    e.attempt = cur.attempt;
    e.detail = std::string(expired_reason) + ": " + why;
  });
  settle_and_report(self, outcome::discarded);
  return true;
}

} // namespace bus::detail
