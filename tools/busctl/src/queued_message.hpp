// A message as it sits on an error (or skipped) queue, read without taking
// it away: its headers in wire order, its AMQP properties and its body, plus
// the fault facts the bus wrote (bus-fault-*) read back by name. Pure data,
// no broker: the broker side fills it in, everything else only reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/rabbitmq_admin.hpp"

namespace bus::ctl {

struct header_field {
  std::string name;
  // Text kinds as strings, numbers as numbers, tables as objects, arrays as
  // arrays: what the broker sent, in a form both outputs can print.
  nlohmann::json value;
};

struct queued_message {
  std::size_t position = 0; // 1-based, from the head of the queue when it was read
  // bus-message-id, else the AMQP message-id property, else empty (a message
  // without any id can be selected by group or --all only).
  std::string id;
  std::vector<header_field> headers;
  nlohmann::json properties = nlohmann::json::object(); // the AMQP properties that were set
  std::string body;
  bool redelivered = false; // the broker had delivered it before (to anyone)
};

// The message the admin seam read at `position` (1-based) of its queue, with
// its id: bus-message-id, else the AMQP message-id property.
[[nodiscard]] queued_message to_queued_message(const rabbitmq_queued_message& m,
                                               std::size_t position);

// The header's value if it is present and text (or a number, as text).
[[nodiscard]] std::optional<std::string> header_text(const queued_message& m,
                                                     std::string_view name);

// bus-message-type, else the AMQP type property, else empty.
[[nodiscard]] std::string message_type_of(const queued_message& m);

// What the bus wrote when it moved the message to the error queue. Missing
// headers read as empty texts and absent counts.
struct fault_summary {
  std::string exception_type;
  std::string exception_message;
  // bus-fault-reason; when the bus wrote none, the broker's reason for
  // dead-lettering it (x-death: delivery_limit, rejected, expired, maxlen).
  std::string reason;
  std::string at; // ISO 8601, as written (bus-fault-at)
  std::string endpoint;
  std::string original_address;
  std::string stream_offset; // bus-fault-stream-offset: read from a stream, at this offset
  std::optional<std::int64_t> immediate_retries;
  std::optional<std::int64_t> delivery_count; // redeliveries before it failed for good
  std::optional<std::int64_t> replay_count;   // replays by busctl before this failure
};

[[nodiscard]] fault_summary fault_of(const queued_message& m);

} // namespace bus::ctl
