// How an endpoint names the type of a message that arrived with no type it
// handles: what a producer outside the bus sends (another language, a plain
// AMQP client) when it says what its message is some other way, or not at
// all. endpoint_builder::foreign_types takes one.
//
// A mapping sees the envelope as the transport built it, headers included:
// RabbitMQ adds where the message came from and what its AMQP properties
// said (header::amqp_* in bus/header_names.hpp). It returns a
// registered message type name, or an empty string for none. It runs on the
// endpoint's consumer for every message whose type the endpoint has no
// handler for, the bus's own included: keep it cheap, and make it name
// nothing for what it does not know.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "bus/envelope.hpp"

namespace bus {

using type_mapping = std::function<std::string(const envelope&)>;

// Every message without a type the endpoint handles is `type`: for a queue
// that only ever carries one kind of message.
[[nodiscard]] type_mapping every_message_is(std::string type);

// By the value of header `name`: `types` maps a value to a registered type
// name. Another value, or no such header, names nothing.
[[nodiscard]] type_mapping type_by_header(std::string name,
                                          std::map<std::string, std::string> types);

} // namespace bus
