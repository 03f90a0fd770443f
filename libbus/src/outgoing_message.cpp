#include "bus/outgoing_message.hpp"

#include <nlohmann/json.hpp>

#include "bus/wire.hpp"

namespace bus {

namespace {

// The record's version: a reader refuses what a later bus wrote rather
// than guess at it.
constexpr int record_version = 1;

error malformed(const std::string& why) {
  return error{errc::malformed_message, "stored outgoing message: " + why};
}

} // namespace

result<std::string> encode_outgoing(const outgoing_message& out) {
  auto wire = to_wire(out.message);
  if (!wire)
    return wire.error();
  auto headers = nlohmann::json::array();
  for (const auto& [name, value] : wire->headers)
    headers.push_back({name, value});
  nlohmann::json record{{"v", record_version},
                        {"queue", out.queue},
                        {"delay_ms", out.delay.count()},
                        {"headers", std::move(headers)},
                        {"body", std::move(wire->body)}};
  // Invalid UTF-8 in a header or body is replaced, never thrown on: the
  // body was valid JSON text already, so only a header could carry it.
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

result<std::vector<std::string>> encode_outgoing(const std::vector<outgoing_message>& outbox) {
  std::vector<std::string> rows;
  rows.reserve(outbox.size());
  for (const auto& out : outbox) {
    auto row = encode_outgoing(out);
    if (!row)
      return row.error();
    rows.push_back(std::move(*row));
  }
  return rows;
}

result<outgoing_message> decode_outgoing(std::string_view record) {
  auto json = nlohmann::json::parse(record, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return malformed("not a JSON object");
  auto version = json.find("v");
  if (version == json.end() || !version->is_number_integer() || *version != record_version)
    return malformed("version is not " + std::to_string(record_version));
  auto queue = json.find("queue");
  auto delay = json.find("delay_ms");
  auto headers = json.find("headers");
  auto body = json.find("body");
  if (queue == json.end() || !queue->is_string())
    return malformed("'queue' is missing or not a string");
  if (delay == json.end() || !delay->is_number_integer() || delay->get<std::int64_t>() < 0)
    return malformed("'delay_ms' is missing or not a non-negative integer");
  if (headers == json.end() || !headers->is_array())
    return malformed("'headers' is missing or not an array");
  if (body == json.end() || !body->is_string())
    return malformed("'body' is missing or not a string");
  wire_message wire;
  for (const auto& entry : *headers) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_string())
      return malformed("a header is not a [name, value] pair of strings");
    wire.headers.set(entry[0].get<std::string>(), entry[1].get<std::string>());
  }
  wire.body = body->get<std::string>();
  auto message = from_wire(std::move(wire));
  if (!message)
    return malformed(message.error().message);
  return outgoing_message{queue->get<std::string>(), std::move(*message),
                          duration(delay->get<std::int64_t>())};
}

} // namespace bus
