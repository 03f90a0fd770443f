// rabbitmq-c's view of a message turned into the admin seam's
// (rabbitmq_queued_message, bus/rabbitmq_admin.hpp): header values of every
// AMQP field kind, and the basic properties that were set, as JSON values.
// No I/O; only reads the structures it is given.
#pragma once

#include <amqp.h>

#include <nlohmann/json.hpp>

#include "bus/rabbitmq_admin.hpp"

namespace bus::detail {

// Text kinds as strings (bytes as they are; the renderers replace what is
// not UTF-8), integers and floats as numbers, timestamps as their seconds,
// decimals as text, tables as objects, arrays as arrays, void as null.
[[nodiscard]] nlohmann::json field_to_json(const amqp_field_value_t& v);

// The basic properties whose flag is set, headers excluded.
[[nodiscard]] nlohmann::json properties_to_json(const amqp_basic_properties_t& p);

// A copy of `m`, which may be freed afterwards.
[[nodiscard]] rabbitmq_queued_message to_queued_message(const amqp_message_t& m, bool redelivered);

} // namespace bus::detail
