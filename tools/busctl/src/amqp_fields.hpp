// rabbitmq-c's view of a message turned into busctl's (queued_message):
// header values of every AMQP field kind, and the basic properties that
// were set, as JSON values. No I/O; only reads the structures it is given.
#pragma once

#include <amqp.h>

#include <cstddef>

#include <nlohmann/json.hpp>

#include "queued_message.hpp"

namespace bus::ctl::detail {

// Text kinds as strings (bytes as they are; the renderers replace what is
// not UTF-8), integers and floats as numbers, timestamps as their seconds,
// decimals as text, tables as objects, arrays as arrays, void as null.
[[nodiscard]] nlohmann::json field_to_json(const amqp_field_value_t& v);

// The basic properties whose flag is set, headers excluded.
[[nodiscard]] nlohmann::json properties_to_json(const amqp_basic_properties_t& p);

// The message read at `position` (1-based) of its queue.
[[nodiscard]] queued_message to_queued_message(const amqp_message_t& m, std::size_t position,
                                               bool redelivered);

} // namespace bus::ctl::detail
