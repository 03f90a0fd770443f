#include "delivery_steps.hpp"

#include "bus/header_names.hpp"
#include "bus/masstransit.hpp"
#include "bus/nservicebus.hpp"
#include "bus/servicecontrol.hpp"
#include "outgoing.hpp"
#include "stream/reader.hpp"

namespace bus::detail {

caught_exception invoke(const handler_slot& slot, const void* message,
                        handler_context& ctx) noexcept {
  // Exceptions stop here, whatever their type: nothing a handler throws
  // crosses into the actor. One derived from std::exception (nearly all)
  // is looked into by the clause that caught it: a rethrow costs as much
  // as the handler's own throw, once per failed attempt.
  try {
    slot.invoke(message, ctx);
    return {};
  } catch (const std::exception& e) {
    return caught_exception::handled(e);
  } catch (...) {
    return caught_exception(std::current_exception());
  }
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
  f.stream_offset = d.stream_offset;
  return f;
}

std::string foreign_type(const endpoint_runtime& rt, const envelope& msg, std::string* problem) {
  const auto& mapping = rt.definition().foreign_types;
  if (!mapping)
    return {};
  try {
    return mapping(msg);
  } catch (const std::exception& e) {
    if (problem)
      *problem = e.what();
  } catch (...) {
    if (problem)
      *problem = "an exception that is not a std::exception";
  }
  return {};
}

std::string skipped_reason(const endpoint_runtime& rt, const envelope& msg) {
  auto reason = "endpoint '" + rt.name() + "' has no handler for "
                + (msg.message_type.empty() ? std::string("a message without a type")
                                            : "'" + msg.message_type + "'");
  if (auto why = msg.headers.find(header::wire_error))
    reason += ": " + std::string(*why);
  if (auto names = msg.headers.find(masstransit::header::message_types))
    reason += "; MassTransit's envelope named it '" + std::string(*names)
              + "' (endpoint_builder::masstransit lists the names it reads)";
  if (auto enclosed = msg.headers.find(nservicebus::header::enclosed_message_types))
    reason += "; NServiceBus named it '" + std::string(*enclosed)
              + "' (endpoint_builder::nservicebus lists the names it reads)";
  if (rt.definition().foreign_types) {
    std::string problem;
    auto named = foreign_type(rt, msg, &problem);
    reason += !problem.empty() ? "; its foreign_types mapping threw: " + problem
              : named.empty()  ? std::string("; its foreign_types mapping named no type")
                               : "; its foreign_types mapping named '" + named
                                  + "', which it has no handler for";
  }
  return reason;
}

envelope skipped_copy(const endpoint_runtime& rt, const envelope& msg) {
  envelope copy = msg;
  copy.headers.set(header::skipped_reason, skipped_reason(rt, msg));
  return copy;
}

envelope error_queue_copy(const endpoint_runtime& rt, const envelope& msg,
                          const fault_details& fault) {
  auto copy = with_fault_headers(msg, fault, rt.config().limits);
  if (rt.config().servicecontrol_headers)
    copy = servicecontrol::with_failed_headers(std::move(copy), fault, rt.config().limits);
  return copy;
}

envelope minimal_error_queue_copy(const endpoint_runtime& rt, const envelope& msg,
                                  const fault_details& fault) {
  auto minimal = fault;
  minimal.exception.message.clear();
  minimal.reason = truncate_utf8(minimal.reason, 256);
  minimal.exception.type = truncate_utf8(minimal.exception.type, 256);
  auto bare = msg;
  bare.headers.erase_prefix(header::prefix);
  auto copy = with_fault_headers(std::move(bare), minimal, fault_limits{256});
  if (rt.config().servicecontrol_headers) {
    copy.headers.erase_prefix("NServiceBus.ExceptionInfo.");
    copy = servicecontrol::with_failed_headers(std::move(copy), minimal, fault_limits{256});
  }
  return copy;
}

void speak_masstransit(const masstransit::message_names& names, const envelope& handled,
                       outgoing_message& out) {
  auto urn = names.urn_of(out.message.message_type);
  if (urn.empty())
    return;
  out.message.headers.set(masstransit::header::write_as, std::move(urn));
  // MassTransit's request client matches a response by its requestId.
  auto request = handled.headers.find(masstransit::header::request_id);
  if (request && !handled.response_address.empty() && out.queue == handled.response_address)
    out.message.headers.set(masstransit::header::request_id, std::string(*request));
}

void speak_nservicebus(const endpoint_runtime& rt, const nservicebus::message_names& names,
                       const envelope& handled, outgoing_message& out) {
  auto type = names.type_of(out.message.message_type);
  if (type.empty())
    return;
  auto why = out.queue.empty() ? nservicebus::intent::publish
             : !handled.response_address.empty() && out.queue == handled.response_address
                 ? nservicebus::intent::reply
                 : nservicebus::intent::send;
  out.message = nservicebus::with_headers(std::move(out.message), type, why, {rt.name(), rt.host()},
                                          &handled);
}

namespace {

// The fault event `event` about `msg`, addressed as both conventions
// address one: to the failed message's fault address, else its response
// address, else published (empty queue).
outgoing_message addressed_fault(const envelope& msg, envelope event) {
  event.correlation_id = msg.correlation_id.empty() ? msg.message_id : msg.correlation_id;
  const auto& address = !msg.fault_address.empty() ? msg.fault_address : msg.response_address;
  event.destination_address = address;
  return outgoing_message{address, std::move(event)};
}

// MassTransit's Fault<T> for `msg`, if it came in MassTransit's envelope to
// an endpoint that speaks it and its type has a MassTransit name: what the
// MassTransit system that sent it listens for, so it gets that instead of
// the bus's fault<T>.
std::optional<outgoing_message> masstransit_fault(const endpoint_runtime& rt, const envelope& msg,
                                                  const fault_details& fault) {
  const auto* names = rt.definition().masstransit.get();
  if (!names || !msg.headers.contains(masstransit::header::message_types))
    return std::nullopt;
  auto urn = names->urn_of(msg.message_type);
  if (urn.empty())
    return std::nullopt;
  auto text = masstransit::write_fault(msg, urn, fault, new_message_id(), masstransit::this_host());
  if (!text) // its body was read from MassTransit's JSON, so it is JSON
    return std::nullopt;
  auto event = make_envelope(message_body::text(std::move(*text)), rt.name(), rt.now());
  auto urns = masstransit::fault_urns(urn);
  event.message_type = urns.substr(0, urns.find(';'));
  event.headers.set(masstransit::header::write_as, std::move(urns));
  for (auto id : {masstransit::header::correlation_id, masstransit::header::request_id})
    if (auto value = msg.headers.find(id))
      event.headers.set(id, std::string(*value));
  event.headers.set(masstransit::header::fault_retry_count,
                    std::to_string(fault.immediate_retries));
  event.headers.set(masstransit::header::fault_redelivery_count,
                    std::to_string(fault.delivery_count));
  return addressed_fault(msg, std::move(event));
}

} // namespace

std::optional<outgoing_message> fault_event(const endpoint_runtime& rt, const envelope& msg,
                                            const message_body& body, const fault_details& fault) {
  const auto& type = body.type();
  if (!rt.definition().publish_faults || !body.is_typed() || !type->make_fault)
    return std::nullopt;
  if (auto theirs = masstransit_fault(rt, msg, fault))
    return theirs;
  auto fault_type = rt.registry().find(type->fault_type_name);
  auto event = make_envelope(
    message_body::typed(type->make_fault(body.object().get(), fault, msg.message_id), fault_type),
    rt.name(), rt.now());
  return addressed_fault(msg, std::move(event));
}

void send_outgoing(const endpoint_runtime& rt, outgoing_message out, completion done) {
  auto& transport = rt.transport();
  if (out.delay > duration::zero()) {
    if (rt.config().send_later)
      rt.config().send_later(out.queue, std::move(out.message), out.delay, std::move(done));
    else
      transport.async_send_delayed(out.queue, std::move(out.message), out.delay, std::move(done));
  } else if (out.queue.empty()) {
    transport.async_publish(std::move(out.message), std::move(done));
  } else {
    transport.async_send(out.queue, std::move(out.message), std::move(done));
  }
}

void settle(const endpoint_runtime& rt, const delivery& d, outcome result) {
  // A stream keeps the message whatever happens; what moves is the
  // reader's position, and only for an ending that is final. One given
  // back (a stop) stays behind the saved offset: read again after a
  // restart. Saved before the ack, which lets the next message come: a
  // process killed in between handles again only the one it was on.
  if (auto* reader = rt.config().stream.get(); reader && d.stream_offset) {
    auto final = result == outcome::handled || result == outcome::dead_lettered
                 || result == outcome::discarded || result == outcome::skipped;
    if (final)
      reader->settled(*d.stream_offset);
  }
  auto& c = rt.counters();
  auto relaxed = std::memory_order_relaxed;
  auto settled = result == outcome::stale     ? bus::result<void>{}
                 : result == outcome::requeue ? rt.transport().reject(d.tag, /*requeue=*/true)
                                              : rt.transport().ack(d.tag);
  if (!settled)
    rt.log().endpoint->error("endpoint '{}' cannot settle delivery {} of message {}: {}", rt.name(),
                             d.tag, d.message->message_id, to_string(settled.error()));
  switch (result) {
    case outcome::handled: c.handled.fetch_add(1, relaxed); break;
    case outcome::dead_lettered: c.dead_lettered.fetch_add(1, relaxed); break;
    case outcome::discarded: c.discarded.fetch_add(1, relaxed); break;
    case outcome::skipped: c.skipped.fetch_add(1, relaxed); break;
    case outcome::scheduled: c.redeliveries_scheduled.fetch_add(1, relaxed); break;
    case outcome::requeue:
    case outcome::stale: c.requeued.fetch_add(1, relaxed); break;
    case outcome::held: break; // never settled: the endpoint keeps it
  }
  c.in_flight.fetch_sub(1, relaxed);
  if (result == outcome::requeue || result == outcome::stale)
    rt.emit(event_kind::requeued, *d.message);
}

} // namespace bus::detail
