#include "delivery_steps.hpp"

#include "bus/header_names.hpp"

namespace bus::detail {

std::exception_ptr invoke(const handler_slot& slot, const void* message,
                          handler_context& ctx) noexcept {
  try {
    slot.invoke(message, ctx);
    return nullptr;
  } catch (...) {
    // Exceptions stop here, whatever their type: nothing a handler throws
    // crosses into the actor.
    return std::current_exception();
  }
}

result<void> release(const endpoint_runtime& rt, std::vector<outgoing_message> outbox) {
  for (auto& out : outbox) {
    auto sent = out.queue.empty() ? rt.transport().publish(std::move(out.message))
                                  : rt.transport().send(out.queue, std::move(out.message));
    if (!sent)
      return sent.error();
  }
  return {};
}

outcome skip(const endpoint_runtime& rt, const delivery& d) {
  const auto& msg = *d.message;
  if (rt.definition().discard_skipped) {
    rt.log().skipped->info("discarding message {} of type '{}': endpoint '{}' has no handler for it",
                           msg.message_id, msg.message_type, rt.name());
    return outcome::skipped;
  }
  envelope copy = msg;
  copy.headers.set(header::skipped_reason,
                   "endpoint '" + rt.name() + "' has no handler for '" + msg.message_type + "'");
  auto sent = rt.transport().send(rt.definition().skipped_queue, std::move(copy));
  if (!sent) {
    rt.log().skipped->error("cannot move message {} to '{}' ({}); returning it to '{}'",
                            msg.message_id, rt.definition().skipped_queue, to_string(sent.error()),
                            d.queue);
    return outcome::requeue;
  }
  rt.log().skipped->warn("moved message {} of type '{}' to '{}': endpoint '{}' has no handler for it",
                         msg.message_id, msg.message_type, rt.definition().skipped_queue, rt.name());
  return outcome::skipped;
}

fault_details make_fault(const endpoint_runtime& rt, const delivery& d, exception_info what,
                         std::string reason, int immediate_retries) {
  fault_details f;
  f.exception = std::move(what);
  f.reason = std::move(reason);
  f.at = rt.now();
  f.host = rt.host();
  f.process = rt.process();
  f.endpoint = rt.name();
  f.original_address = d.queue;
  f.immediate_retries = immediate_retries;
  f.delivery_count = d.message->delivery_count;
  return f;
}

outcome move_to_error(const endpoint_runtime& rt, const delivery& d, const fault_details& fault) {
  const auto& msg = *d.message;
  auto sent = rt.transport().send(rt.definition().error_queue, with_fault_headers(msg, fault));
  if (!sent) {
    rt.log().move_to_error->error(
      "cannot move message {} to the error queue '{}' ({}); returning it to '{}'", msg.message_id,
      rt.definition().error_queue, to_string(sent.error()), d.queue);
    return outcome::requeue;
  }
  rt.log().move_to_error->error("moving message {} to the error queue '{}' because of an exception "
                                "{}: {} ({})",
                                msg.message_id, rt.definition().error_queue, fault.exception.type,
                                fault.exception.message, fault.reason);
  return outcome::dead_lettered;
}

} // namespace bus::detail
