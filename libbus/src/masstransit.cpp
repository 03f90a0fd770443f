#include "bus/masstransit.hpp"

#include <nlohmann/json.hpp>

#include "bus/deadline.hpp"
#include "bus/header_names.hpp"
#include "bus/time.hpp"

namespace bus::masstransit {

namespace {

constexpr std::string_view urn_prefix = "urn:message:";

error malformed(const envelope& received, const std::string& what) {
  return error{errc::malformed_message, "message " + received.message_id
                                          + " is not a MassTransit envelope: " + what};
}

// A field's text: a string as it is, a number or a boolean as JSON, null or
// missing as nothing.
std::string text_of(const nlohmann::json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null())
    return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

} // namespace

result<message_names>
message_names::from(const std::vector<std::pair<std::string, std::string>>& urn_to_registered) {
  message_names out;
  for (const auto& [urn, registered] : urn_to_registered) {
    if (urn.rfind(urn_prefix, 0) != 0 || urn.size() == urn_prefix.size())
      return error{errc::invalid_configuration,
                   "'" + urn + "' is not a MassTransit message type name (urn:message:Namespace:Type)"};
    if (registered.empty())
      return error{errc::invalid_configuration, "'" + urn + "' is mapped to an empty name"};
    if (!out.by_urn_.emplace(urn, registered).second)
      return error{errc::invalid_configuration, "'" + urn + "' is mapped twice"};
    if (!out.by_registered_.emplace(registered, urn).second)
      return error{errc::invalid_configuration,
                   "'" + registered + "' has two MassTransit names; a type has one"};
  }
  return out;
}

std::string message_names::registered_of(const std::vector<std::string>& urns) const {
  for (const auto& urn : urns)
    if (auto it = by_urn_.find(urn); it != by_urn_.end())
      return it->second;
  return {};
}

std::string message_names::urn_of(std::string_view registered) const {
  auto it = by_registered_.find(registered);
  return it == by_registered_.end() ? std::string() : it->second;
}

std::string exchange_of(std::string_view urn) {
  if (urn.substr(0, urn_prefix.size()) != urn_prefix)
    return {};
  // The URN writes generic arguments as "[[A:B],[C:D]]" and a nested type
  // after '+'; MassTransit's RabbitMQ name formatter writes the same type
  // as "--A:B::C:D--" and '-', since '[' and '+' do not belong in an
  // exchange's name.
  auto name = urn.substr(urn_prefix.size());
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    auto rest = name.substr(i);
    if (rest.substr(0, 2) == "[[" || rest.substr(0, 2) == "]]") {
      out += "--";
      ++i;
    } else if (rest.substr(0, 3) == "],[") {
      out += "::";
      i += 2;
    } else {
      out += name[i] == '+' ? '-' : name[i];
    }
  }
  return out;
}

std::string address_name(std::string_view address) {
  address = address.substr(0, address.find('?'));
  if (auto scheme = address.find("://"); scheme != std::string_view::npos)
    address = address.substr(scheme + 3); // host[:port]/[vhost/]name
  else if (auto colon = address.find(':'); colon != std::string_view::npos)
    return std::string(address.substr(colon + 1)); // queue:name, exchange:name
  auto slash = address.rfind('/');
  return std::string(slash == std::string_view::npos ? std::string_view() : address.substr(slash + 1));
}

result<envelope> read_envelope(const envelope& received, const message_names& names) {
  auto text = received.body.to_json_text();
  if (!text)
    return malformed(received, text.error().message);
  auto mt = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!mt.is_object())
    return malformed(received, "the body is not a JSON object");
  envelope out;
  out.message_id = text_of(mt, "messageId");
  if (out.message_id.empty())
    return malformed(received, "it has no messageId");
  auto inner = mt.find("message");
  if (inner == mt.end() || inner->is_null())
    return malformed(received, "it has no message");

  out.headers = received.headers;
  if (auto h = mt.find("headers"); h != mt.end() && h->is_object())
    for (const auto& [name, value] : h->items())
      if (!value.is_null())
        out.headers.set(name, value.is_string() ? value.get<std::string>() : value.dump());

  std::vector<std::string> urns;
  if (auto types = mt.find("messageType"); types != mt.end() && types->is_array())
    for (const auto& t : *types)
      if (t.is_string())
        urns.push_back(t.get<std::string>());
  std::string listed;
  for (const auto& urn : urns)
    listed += (listed.empty() ? "" : ";") + urn;
  out.headers.set(header::message_types, listed);
  out.message_type = names.registered_of(urns);

  out.correlation_id = text_of(mt, "conversationId");
  auto keep = [&](std::string_view header, const char* field) {
    if (auto value = text_of(mt, field); !value.empty())
      out.headers.set(header, std::move(value));
  };
  keep(header::correlation_id, "correlationId");
  keep(header::request_id, "requestId");
  keep(header::initiator_id, "initiatorId");
  keep(header::response_address, "responseAddress");
  out.source_address = address_name(text_of(mt, "sourceAddress"));
  out.destination_address = address_name(text_of(mt, "destinationAddress"));
  out.response_address = address_name(text_of(mt, "responseAddress"));
  out.fault_address = address_name(text_of(mt, "faultAddress"));

  if (auto sent = text_of(mt, "sentTime"); !sent.empty()) {
    auto at = from_iso8601(sent);
    if (!at)
      return malformed(received, "its sentTime '" + sent + "' is not an ISO 8601 UTC time");
    out.sent_at = *at;
  } else {
    out.sent_at = received.sent_at;
  }
  if (auto expires = text_of(mt, "expirationTime"); !expires.empty()) {
    auto at = from_iso8601(expires);
    if (!at)
      return malformed(received,
                       "its expirationTime '" + expires + "' is not an ISO 8601 UTC time");
    set_expires_at(out, *at);
  }
  out.delivery_count = received.delivery_count;
  out.body = message_body::text(inner->dump());
  return out;
}

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The headers of the bus, its transports and MassTransit's own fields: not
// written into MassTransit's headers block.
bool bus_internal(std::string_view name) {
  return starts_with(name, bus::header::prefix) || starts_with(name, "amqp-")
         || starts_with(name, "masstransit-") || starts_with(name, "x-")
         || name == bus::header::traceparent || name == bus::header::tracestate;
}

using json = nlohmann::ordered_json;

// The body of `msg` as JSON, for MassTransit's `what` ("envelope", "fault").
result<json> body_json(const envelope& msg, std::string_view what) {
  auto cannot = "message " + msg.message_id + " cannot be written in MassTransit's "
                + std::string(what) + ": ";
  auto text = msg.body.to_json_text();
  if (!text)
    return error{errc::malformed_message, cannot + text.error().message};
  auto inner = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (inner.is_discarded())
    return error{errc::malformed_message, cannot + "its body is not JSON"};
  return inner;
}

json host_json(const host_info& host) {
  return {{"machineName", host.machine_name},
          {"processName", host.process_name},
          {"processId", host.process_id},
          {"assembly", host.assembly},
          {"assemblyVersion", host.assembly_version},
          {"frameworkVersion", host.framework_version},
          {"massTransitVersion", nullptr},
          {"operatingSystemVersion", host.operating_system_version}};
}

json split_urns(std::string_view urns) {
  auto out = json::array();
  while (!urns.empty()) {
    auto end = urns.find(';');
    if (auto urn = urns.substr(0, end); !urn.empty())
      out.push_back(std::string(urn));
    urns = end == std::string_view::npos ? std::string_view() : urns.substr(end + 1);
  }
  return out;
}

} // namespace

std::string fault_urns(std::string_view urn) {
  auto generic = std::string(urn_prefix) + "MassTransit:Fault";
  return generic + "[[" + std::string(urn.substr(urn_prefix.size())) + "]];" + generic;
}

result<std::string> write_envelope(const envelope& msg, std::string_view urns,
                                   std::string_view broker, const host_info& host) {
  auto inner = body_json(msg, "envelope");
  if (!inner)
    return inner.error();
  auto types = split_urns(urns);
  auto urn = types.empty() ? std::string() : types.front().get<std::string>();
  auto or_null = [](std::string_view value) -> json {
    return value.empty() ? json(nullptr) : json(std::string(value));
  };
  auto from_header = [&](std::string_view name) -> json {
    auto value = msg.headers.find(name);
    return value ? or_null(*value) : json(nullptr);
  };
  auto address = [&](std::string_view name) -> json {
    return name.empty() ? json(nullptr) : json(std::string(broker) + std::string(name));
  };
  json out;
  out["messageId"] = msg.message_id;
  out["requestId"] = from_header(header::request_id);
  out["correlationId"] = from_header(header::correlation_id);
  out["conversationId"] = or_null(msg.correlation_id);
  out["initiatorId"] = from_header(header::initiator_id);
  out["sourceAddress"] = address(msg.source_address);
  out["destinationAddress"] =
    address(msg.destination_address.empty() ? exchange_of(urn) : msg.destination_address);
  auto response = msg.headers.find(header::response_address);
  out["responseAddress"] = response ? json(std::string(*response)) : address(msg.response_address);
  out["faultAddress"] = address(msg.fault_address);
  out["messageType"] = std::move(types);
  out["message"] = std::move(*inner);
  auto expires = expires_at(msg);
  out["expirationTime"] = expires ? json(to_iso8601(*expires)) : json(nullptr);
  out["sentTime"] = to_iso8601(msg.sent_at);
  json headers = json::object();
  for (const auto& [name, value] : msg.headers)
    if (!bus_internal(name))
      headers[name] = value;
  if (auto trace = msg.headers.find(bus::header::traceparent))
    headers["MT-Activity-Id"] = std::string(*trace);
  out["headers"] = std::move(headers);
  out["host"] = host_json(host);
  return out.dump(2);
}

result<std::string> write_fault(const envelope& failed, std::string_view urn,
                                const fault_details& fault, std::string_view fault_id,
                                const host_info& host) {
  auto message = body_json(failed, "fault");
  if (!message)
    return message.error();
  json exception;
  exception["exceptionType"] = fault.exception.type;
  exception["innerException"] = nullptr;
  exception["stackTrace"] = nullptr;
  exception["message"] = fault.exception.message;
  exception["source"] = fault.endpoint;
  exception["data"] = nullptr;
  json out;
  out["faultId"] = std::string(fault_id);
  out["faultedMessageId"] = failed.message_id;
  out["timestamp"] = to_iso8601(fault.at);
  out["exceptions"] = json::array({std::move(exception)});
  out["host"] = host_json(host);
  out["faultMessageTypes"] = json::array({std::string(urn)});
  out["message"] = std::move(*message);
  return out.dump(2);
}

} // namespace bus::masstransit
