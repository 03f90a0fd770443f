#include "delivery_steps.hpp"

#include "bus/header_names.hpp"
#include "dead_letter_file.hpp"
#include "outgoing.hpp"

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

outcome park_on_error_queue(const endpoint_runtime& rt, const delivery& d, const fault_details& fault,
                            const std::string& queue) {
  const auto& msg = *d.message;
  const auto& target = queue.empty() ? rt.definition().error_queue : queue;
  auto& log = *rt.log().move_to_error;
  auto sent = rt.transport().send(target, with_fault_headers(msg, fault, rt.config().limits));
  if (sent) {
    log.error("moving message {} to the error queue '{}' because of an exception {}: {} ({})",
              msg.message_id, target, fault.exception.type, fault.exception.message, fault.reason);
    return outcome::dead_lettered;
  }
  // A move to the error queue that fails must never loop. First fallback:
  // the smallest fault headers that still say what happened (a broker may
  // refuse large headers).
  log.error("the error queue '{}' refused message {} ({}); trying again with minimal fault headers",
            target, msg.message_id, to_string(sent.error()));
  auto minimal = fault;
  minimal.exception.message.clear();
  minimal.reason = truncate_utf8(minimal.reason, 256);
  minimal.exception.type = truncate_utf8(minimal.exception.type, 256);
  auto bare = msg;
  bare.headers.erase_prefix(header::prefix);
  sent = rt.transport().send(target, with_fault_headers(std::move(bare), minimal, fault_limits{256}));
  if (sent) {
    log.error("moved message {} to the error queue '{}' with minimal fault headers: {}",
              msg.message_id, target, fault.reason);
    return outcome::dead_lettered;
  }
  // Second fallback: a local file, so the message is kept somewhere.
  auto file = append_dead_letter(rt.config().dead_letter_directory, rt.name(), msg, fault);
  if (file) {
    log.error("the error queue '{}' refused message {} again ({}); wrote it to the dead-letter "
              "file '{}'",
              target, msg.message_id, to_string(sent.error()), *file);
    return outcome::dead_lettered;
  }
  // Nowhere to keep it: give it back rather than lose it.
  log.critical("cannot keep failed message {} anywhere (error queue: {}; file: {}); returning it "
               "to '{}'",
               msg.message_id, to_string(sent.error()), to_string(file.error()), d.queue);
  return outcome::requeue;
}

void raise_fault(const endpoint_runtime& rt, const delivery& d, const message_body& body,
                 const fault_details& fault) {
  const auto& type = body.type();
  if (!rt.definition().publish_faults || !body.is_typed() || !type->make_fault)
    return;
  const auto& msg = *d.message;
  auto fault_type = rt.registry().find(type->fault_type_name);
  auto event = make_envelope(
    message_body::typed(type->make_fault(body.object().get(), fault, msg.message_id), fault_type),
    rt.name(), rt.now());
  event.correlation_id = msg.correlation_id.empty() ? msg.message_id : msg.correlation_id;
  const auto& address = !msg.fault_address.empty() ? msg.fault_address : msg.response_address;
  event.destination_address = address;
  auto raised = address.empty() ? rt.transport().publish(std::move(event))
                                : rt.transport().send(address, std::move(event));
  if (!raised)
    rt.log().move_to_error->error("cannot raise {} for message {}: {}", type->fault_type_name,
                                  msg.message_id, to_string(raised.error()));
}

} // namespace bus::detail
