#include "bus/wire.hpp"

#include <charconv>

#include "bus/header_names.hpp"

namespace bus {

namespace {

// The envelope fields that travel as headers, in the order they are written.
struct string_field {
  std::string_view header;
  std::string envelope::*member;
};

constexpr string_field string_fields[] = {
  {header::message_id, &envelope::message_id},
  {header::message_type, &envelope::message_type},
  {header::correlation_id, &envelope::correlation_id},
  {header::source_address, &envelope::source_address},
  {header::destination_address, &envelope::destination_address},
  {header::response_address, &envelope::response_address},
  {header::fault_address, &envelope::fault_address},
};

template <class Int>
bool parse_int(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

} // namespace

result<wire_message> to_wire(const envelope& env) {
  auto body = env.body.to_json_text();
  if (!body)
    return body.error();
  wire_message out;
  for (const auto& field : string_fields)
    if (!(env.*field.member).empty())
      out.headers.set(field.header, env.*field.member);
  out.headers.set(header::sent_at, std::to_string(to_unix_ms(env.sent_at)));
  out.headers.set(header::delivery_count, std::to_string(env.delivery_count));
  for (const auto& [name, value] : env.headers)
    out.headers.set(name, value);
  out.body = std::move(*body);
  return out;
}

result<envelope> from_wire(wire_message msg) {
  envelope env;
  for (const auto& field : string_fields)
    if (auto value = msg.headers.find(field.header))
      env.*field.member = std::string(*value);
  if (env.message_id.empty())
    return error{errc::malformed_message, "the message has no bus-message-id header"};
  if (env.message_type.empty())
    return error{errc::malformed_message,
                 "message " + env.message_id + " has no bus-message-type header"};
  if (auto sent = msg.headers.find(header::sent_at)) {
    std::int64_t ms = 0;
    std::optional<time_point> at;
    if (parse_int(*sent, ms))
      at = checked_from_unix_ms(ms);
    if (!at)
      return error{errc::malformed_message,
                   "message " + env.message_id
                     + " has a bus-sent-at that is not a time in Unix milliseconds"};
    env.sent_at = *at;
  }
  if (auto count = msg.headers.find(header::delivery_count)) {
    if (!parse_int(*count, env.delivery_count))
      return error{errc::malformed_message,
                   "message " + env.message_id
                     + " has a bus-delivery-count that is not a non-negative integer"};
  }
  // What is left after the envelope's own fields are the user's headers
  // and the bus's extra ones (fault-*, ...).
  for (const auto& field : string_fields)
    msg.headers.erase(field.header);
  msg.headers.erase(header::sent_at);
  msg.headers.erase(header::delivery_count);
  env.headers = std::move(msg.headers);
  env.body = message_body::text(std::move(msg.body));
  return env;
}

} // namespace bus
