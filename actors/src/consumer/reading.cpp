#include "consumer/reading.hpp"


#include "bus/handler_verdicts.hpp"
#include "bus/header_names.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "bus/servicecontrol.hpp"
#include "consumer/endings.hpp"
#include "consumer/outcome.hpp"
#include "consumer/resilience.hpp"
#include "consumer/settling.hpp"
#include "delivery_steps.hpp"

namespace bus::detail {

namespace {

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

} // namespace

bool take_delivery(consumer* self, delivery d, claim_ptr claim, bool throttled, bool probe) {
  const auto& rt = *self->state.rt;
  const auto now = rt.now(); // one clock read for what follows
  auto& cur = self->state.current.emplace();
  cur.item = std::move(d);
  cur.claim = std::move(claim);
  cur.throttled = throttled;
  cur.attempt_started = now; // run_attempt() sets it again as the handler starts
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
  cur.history = read_delivery_history(msg, rt.name(), now);
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

} // namespace bus::detail
