#include "amqp_message.hpp"

#include <charconv>
#include <optional>
#include <vector>

#include "amqp_bytes.hpp"
#include "bus/header_names.hpp"
#include "bus/nservicebus.hpp"
#include "bus/rabbitmq_transport.hpp"

namespace bus::detail {

namespace {

// AMQP short strings (header names, message-id, type, ...) hold 255 bytes.
constexpr std::size_t max_short_string = 255;
// The header table travels in the content header frame, which must fit in
// one frame (frame_max 131072); leave room for the other properties.
constexpr std::size_t max_header_bytes = 120000;

// A header value as text; nothing for the kinds that have no flat text
// form (tables, arrays, decimals, void). Integers of any width are
// accepted: the broker re-encodes what it dead-letters.
std::optional<std::string> field_text(const amqp_field_value_t& v) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
      return text_of(v.value.bytes);
    case AMQP_FIELD_KIND_BOOLEAN:
      return std::string(v.value.boolean ? "true" : "false");
    case AMQP_FIELD_KIND_I8:
      return std::to_string(v.value.i8);
    case AMQP_FIELD_KIND_U8:
      return std::to_string(v.value.u8);
    case AMQP_FIELD_KIND_I16:
      return std::to_string(v.value.i16);
    case AMQP_FIELD_KIND_U16:
      return std::to_string(v.value.u16);
    case AMQP_FIELD_KIND_I32:
      return std::to_string(v.value.i32);
    case AMQP_FIELD_KIND_U32:
      return std::to_string(v.value.u32);
    case AMQP_FIELD_KIND_I64:
      return std::to_string(v.value.i64);
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
      return std::to_string(v.value.u64);
    case AMQP_FIELD_KIND_F32:
      return std::to_string(v.value.f32);
    case AMQP_FIELD_KIND_F64:
      return std::to_string(v.value.f64);
    default:
      return std::nullopt;
  }
}

} // namespace

result<outgoing_message> outgoing_message::from(const envelope& env) {
  auto wire = to_wire(env);
  if (!wire)
    return wire.error();
  std::size_t header_bytes = 0;
  for (const auto& [name, value] : wire->headers) {
    if (name.size() > max_short_string)
      return error{errc::malformed_message,
                   "message " + env.message_id + " has a header name longer than 255 bytes ('"
                       + name.substr(0, 40) + "...'), which AMQP cannot carry"};
    header_bytes += name.size() + value.size() + 6;
  }
  if (header_bytes > max_header_bytes)
    return error{errc::malformed_message,
                 "message " + env.message_id + " has " + std::to_string(header_bytes)
                     + " bytes of headers; AMQP carries at most about "
                     + std::to_string(max_header_bytes) + " (put large data in the body)"};
  outgoing_message out;
  out.wire_ = std::move(*wire);
  out.message_id_ = env.message_id;
  out.type_ = env.message_type;
  out.correlation_id_ = env.correlation_id;
  // NServiceBus's RabbitMQ transport reads the correlation id from this
  // property over its header: a message in its form mirrors its own.
  if (auto theirs = env.headers.find(nservicebus::header::correlation_id))
    out.correlation_id_ = std::string(*theirs);
  auto ms = to_unix_ms(env.sent_at);
  out.timestamp_s_ = ms > 0 ? static_cast<std::uint64_t>(ms / 1000) : 0;
  return out;
}

result<outgoing_message>
outgoing_message::in_masstransit_envelope(const envelope& env, std::string_view urns,
                                          std::string_view broker,
                                          const masstransit::host_info& host) {
  auto body = masstransit::write_envelope(env, urns, broker, host);
  if (!body)
    return body.error();
  outgoing_message out;
  out.wire_.body = std::move(*body);
  out.content_type_ = std::string(masstransit::content_type);
  out.message_id_ = env.message_id;
  auto ms = to_unix_ms(env.sent_at);
  out.timestamp_s_ = ms > 0 ? static_cast<std::uint64_t>(ms / 1000) : 0;
  return out;
}

int outgoing_message::publish(amqp_connection_state_t conn, amqp_channel_t ch,
                              const std::string& exchange, const std::string& routing_key,
                              bool mandatory) const {
  std::vector<amqp_table_entry_t> entries;
  entries.reserve(wire_.headers.size());
  for (const auto& [name, value] : wire_.headers) {
    amqp_table_entry_t e{};
    e.key = bytes_of(name);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes = bytes_of(value);
    entries.push_back(e);
  }
  amqp_basic_properties_t p{};
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.content_type = bytes_of(content_type_);
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  // The properties only mirror headers for RabbitMQ's tools (the management
  // UI, shovels); a value too long for a short string stays in the headers.
  auto mirror = [&](const std::string& value, amqp_flags_t flag, amqp_bytes_t& field) {
    if (!value.empty() && value.size() <= max_short_string) {
      p._flags |= flag;
      field = bytes_of(value);
    }
  };
  mirror(message_id_, AMQP_BASIC_MESSAGE_ID_FLAG, p.message_id);
  mirror(type_, AMQP_BASIC_TYPE_FLAG, p.type);
  mirror(correlation_id_, AMQP_BASIC_CORRELATION_ID_FLAG, p.correlation_id);
  if (timestamp_s_ != 0) {
    p._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    p.timestamp = timestamp_s_;
  }
  return amqp_basic_publish(conn, ch, bytes_of(exchange), bytes_of(routing_key), mandatory ? 1 : 0,
                            /*immediate=*/0, &p, bytes_of(wire_.body));
}

namespace {

std::optional<std::string> property_text(const amqp_basic_properties_t& props, amqp_flags_t flag,
                                         const amqp_bytes_t& field) {
  if (!(props._flags & flag) || field.len == 0)
    return std::nullopt;
  return text_of(field);
}

// What a foreign producer's message says in its AMQP properties, written
// where from_wire reads it, wherever the bus's own header is missing; and
// what a type mapping or an operator may want to see, as headers.
void read_foreign_properties(const amqp_basic_properties_t& props, const amqp_origin& origin,
                             wire_message& wire) {
  auto fill = [&](std::string_view header, amqp_flags_t flag, const amqp_bytes_t& field) {
    if (wire.headers.find(header))
      return;
    if (auto value = property_text(props, flag, field))
      wire.headers.set(header, std::move(*value));
  };
  fill(header::message_id, AMQP_BASIC_MESSAGE_ID_FLAG, props.message_id);
  fill(header::message_type, AMQP_BASIC_TYPE_FLAG, props.type);
  fill(header::correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG, props.correlation_id);
  fill(header::response_address, AMQP_BASIC_REPLY_TO_FLAG, props.reply_to);
  bool stamped = (props._flags & AMQP_BASIC_TIMESTAMP_FLAG)
                 && props.timestamp <= static_cast<std::uint64_t>(max_unix_ms / 1000);
  if (stamped && !wire.headers.find(header::sent_at)) {
    auto sent_ms = static_cast<std::int64_t>(props.timestamp) * 1000;
    wire.headers.set(header::sent_at, std::to_string(sent_ms));
    // AMQP's expiration is a time to live in milliseconds, as text.
    std::int64_t ttl = 0;
    if (auto text = property_text(props, AMQP_BASIC_EXPIRATION_FLAG, props.expiration);
        text && !wire.headers.find(header::expires_at)) {
      auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), ttl);
      if (ec == std::errc() && end == text->data() + text->size() && ttl >= 0
          && ttl <= max_unix_ms - sent_ms)
        wire.headers.set(header::expires_at, std::to_string(sent_ms + ttl));
    }
  }
  wire.headers.set(header::amqp_exchange, origin.exchange);
  wire.headers.set(header::amqp_routing_key, origin.routing_key);
  if (auto type = property_text(props, AMQP_BASIC_TYPE_FLAG, props.type))
    wire.headers.set(header::amqp_type, std::move(*type));
  if (auto content = property_text(props, AMQP_BASIC_CONTENT_TYPE_FLAG, props.content_type))
    wire.headers.set(header::amqp_content_type, std::move(*content));
}

} // namespace

envelope envelope_from_amqp(const amqp_basic_properties_t& props, amqp_bytes_t body,
                            const amqp_origin& origin, std::uint64_t random_hi,
                            std::uint64_t random_lo) {
  wire_message wire;
  if (props._flags & AMQP_BASIC_HEADERS_FLAG) {
    for (int i = 0; i < props.headers.num_entries; ++i) {
      const auto& entry = props.headers.entries[i];
      auto name = text_of(entry.key);
      if (name.rfind("x-", 0) == 0)
        continue; // the broker's: x-death, x-delivery-count, x-first-death-*, ...
      if (auto value = field_text(entry.value))
        wire.headers.set(name, std::move(*value));
    }
  }
  wire.body = text_of(body);
  // The bus's own messages carry both headers: from_wire takes them as they are.
  if (!wire.headers.find(header::message_id) || !wire.headers.find(header::message_type))
    read_foreign_properties(props, origin, wire);

  auto original = wire; // from_wire consumes its argument; keep what came for the fallback
  auto env = from_wire(std::move(wire));
  if (env)
    return std::move(*env);

  // Not a valid bus message: rebuild what can be trusted, and say why.
  auto fixed = std::move(original);
  if (!fixed.headers.find(header::message_id))
    fixed.headers.set(header::message_id, make_message_id(random_hi, random_lo));
  bool typeless = !fixed.headers.find(header::message_type);
  if (typeless)
    fixed.headers.set(header::message_type, "-"); // from_wire wants one; cleared below
  auto rebuilt = from_wire(fixed);
  if (!rebuilt) {
    // What is left to refuse are the optional fields from_wire checks
    // (bus-sent-at, bus-delivery-count): drop them, whatever its rules.
    fixed.headers.erase(header::sent_at);
    fixed.headers.erase(header::delivery_count);
    if ((props._flags & AMQP_BASIC_TIMESTAMP_FLAG)
        && props.timestamp <= static_cast<std::uint64_t>(max_unix_ms / 1000))
      fixed.headers.set(header::sent_at, std::to_string(props.timestamp * 1000));
    rebuilt = from_wire(std::move(fixed));
  }
  envelope out;
  if (rebuilt) {
    out = std::move(*rebuilt);
  } else { // cannot happen with the fixes above; keep the bytes regardless
    out.message_id = make_message_id(random_hi, random_lo);
    out.body = message_body::text(text_of(body));
  }
  auto why = env.error().message;
  if (typeless) {
    out.message_type.clear();
    why = "it has no bus-message-type header and no AMQP type property (exchange '"
          + origin.exchange + "', routing key '" + origin.routing_key + "')";
  }
  out.headers.set(header::wire_error, std::move(why));
  return out;
}

} // namespace bus::detail
