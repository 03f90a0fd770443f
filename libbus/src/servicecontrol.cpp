#include "bus/servicecontrol.hpp"

#include "bus/header_names.hpp"
#include "bus/nservicebus.hpp"
#include "bus/replay_headers.hpp"

namespace bus::servicecontrol {

namespace {

// Sets `name` unless the message has it: what an NServiceBus sender wrote
// is the truth ServiceControl should show.
void set_if_absent(headers& h, std::string_view name, std::string value) {
  if (!h.contains(name) && !value.empty())
    h.set(name, std::move(value));
}

} // namespace

envelope with_failed_headers(envelope failed, const fault_details& fault,
                             const fault_limits& limits) {
  auto& h = failed.headers;
  auto cut = [&](std::string text) {
    return truncate_utf8(std::move(text), limits.max_message_bytes);
  };
  h.set(header::failed_queue, fault.original_address);
  h.set(header::time_of_failure, nservicebus::format_time(fault.at));
  h.set(header::processing_endpoint, fault.endpoint);
  h.set(header::processing_machine, fault.host);
  h.set(header::host_display_name, fault.host);
  h.set(header::exception_type, cut(fault.exception.type));
  h.set(header::exception_message, cut(fault.exception.message));
  h.set(header::exception_source, fault.endpoint);
  h.set(header::exception_stack_trace, cut(fault.exception.type + ": " + fault.exception.message));
  h.set(header::delayed_retries, std::to_string(fault.delivery_count));
  h.set(header::immediate_retries, std::to_string(fault.immediate_retries));
  // What ServiceControl reads to name and show the message: its id is
  // required, the type is the text before the first comma, the content type
  // decides whether the body is shown as text.
  set_if_absent(h, nservicebus::header::message_id, failed.message_id);
  set_if_absent(h, nservicebus::header::enclosed_message_types, failed.message_type);
  set_if_absent(h, nservicebus::header::content_type, "application/json");
  // A message sent outside any conversation starts its own, as the bus's
  // fault<T> event counts it.
  set_if_absent(h, nservicebus::header::conversation_id,
                failed.correlation_id.empty() ? failed.message_id : failed.correlation_id);
  set_if_absent(h, nservicebus::header::message_intent, "Send");
  set_if_absent(h, nservicebus::header::originating_endpoint, failed.source_address);
  set_if_absent(h, nservicebus::header::reply_to_address, failed.response_address);
  if (failed.sent_at != time_point{})
    set_if_absent(h, nservicebus::header::time_sent, nservicebus::format_time(failed.sent_at));
  return failed;
}

std::optional<envelope> as_fresh_attempt(const envelope& received) {
  const auto& h = received.headers;
  if (!h.contains(header::retry_id) || !h.contains(bus::header::fault_endpoint)
      || h.contains(bus::header::fault_pending))
    return std::nullopt;
  envelope fresh = received;
  fresh.headers = {};
  for (const auto& [name, value] : h)
    if (kept_on_replay(name) || name == bus::header::wire_error)
      fresh.headers.set(name, value);
  fresh.delivery_count = 0;
  return fresh;
}

std::optional<outgoing_message> retry_acknowledgement(const envelope& handled, time_point now,
                                                      std::string id, std::string source) {
  auto retry = handled.headers.find(header::retry_id);
  auto queue = handled.headers.find(header::retry_acknowledgement_queue);
  if (!retry || !queue || queue->empty())
    return std::nullopt;
  envelope ack;
  ack.message_id = std::move(id);
  ack.message_type = std::string(acknowledgement_type);
  ack.correlation_id = handled.correlation_id;
  ack.sent_at = now;
  ack.source_address = std::move(source);
  ack.destination_address = std::string(*queue);
  ack.body = message_body::text("");
  ack.headers.set(header::retry_successful, nservicebus::format_time(now));
  ack.headers.set(header::retry_id, std::string(*retry));
  ack.headers.set(header::control_message, "True");
  return outgoing_message{std::string(*queue), std::move(ack)};
}

} // namespace bus::servicecontrol
