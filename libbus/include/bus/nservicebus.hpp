// NServiceBus's wire convention (issue 25), the pure part: a message an
// NServiceBus endpoint sent over RabbitMQ read into the bus's envelope. Its
// metadata travels in NServiceBus.* headers and its body is the bare
// message. Facts from NServiceBus 8.2 and NServiceBus.RabbitMQ 8.0:
// tests/interop/golden/ has the formats and where each one comes from.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/time.hpp"

namespace bus::nservicebus {

namespace header {
inline constexpr std::string_view message_id = "NServiceBus.MessageId";
inline constexpr std::string_view enclosed_message_types = "NServiceBus.EnclosedMessageTypes";
inline constexpr std::string_view conversation_id = "NServiceBus.ConversationId";
inline constexpr std::string_view correlation_id = "NServiceBus.CorrelationId";
inline constexpr std::string_view reply_to_address = "NServiceBus.ReplyToAddress";
inline constexpr std::string_view time_sent = "NServiceBus.TimeSent";
inline constexpr std::string_view time_to_be_received = "NServiceBus.TimeToBeReceived";
inline constexpr std::string_view message_intent = "NServiceBus.MessageIntent";
inline constexpr std::string_view content_type = "NServiceBus.ContentType";
} // namespace header

// NServiceBus's names of message types, the full .NET type name
// ("Contracts.OrderPlaced", what its EnclosedMessageTypes header lists
// before each assembly name), and the registered names they stand for.
class message_names {
public:
  message_names() = default;
  // errc::invalid_configuration for an empty name, one with a comma (the
  // type name alone, without its assembly), or a name given twice.
  [[nodiscard]] static result<message_names>
  from(const std::vector<std::pair<std::string, std::string>>& type_to_registered);

  // The registered name of the first type `enclosed` lists that has one
  // ("Contracts.OrderPlaced, Contracts, Version=...;Contracts.IOrderEvent, ..."),
  // or empty.
  [[nodiscard]] std::string registered_of(std::string_view enclosed) const;
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& types() const noexcept {
    return by_type_;
  }

private:
  std::map<std::string, std::string, std::less<>> by_type_;
};

// The exchange NServiceBus publishes a type to on RabbitMQ (the
// conventional routing topology): "Contracts:OrderPlaced" for
// "Contracts.OrderPlaced", the namespace and the name joined by a colon.
[[nodiscard]] std::string exchange_of(std::string_view type);

// NServiceBus's time format, "2024-05-01 12:00:00:123456 Z" (UTC; not
// ISO 8601), read to the millisecond; nothing for any other text.
[[nodiscard]] std::optional<time_point> parse_time(std::string_view text) noexcept;
// `t` in that format, to the microsecond.
[[nodiscard]] std::string format_time(time_point t);
// A .NET TimeSpan as TimeSpan.ToString() writes it, "[d.]hh:mm:ss[.fffffff]",
// to the millisecond; nothing for any other text or a negative span.
[[nodiscard]] std::optional<duration> parse_time_span(std::string_view text) noexcept;

// Whether `received` came from NServiceBus: it carries NServiceBus.MessageId.
[[nodiscard]] bool is_nservicebus(const envelope& received);

// The bus's envelope of `received`, a message from NServiceBus: its type
// the registered name of the first enclosed type `names` knows (else the
// AMQP type property's; else empty: the endpoint skips it), its id
// NServiceBus.MessageId, its correlation id NServiceBus.ConversationId (the
// bus's correlation is the conversation), its response address
// NServiceBus.ReplyToAddress, its time sent NServiceBus.TimeSent, and
// NServiceBus.TimeToBeReceived counted from then as bus-expires-at. Every
// header stays. errc::malformed_message for a time or time span that does
// not parse.
[[nodiscard]] result<envelope> read_message(const envelope& received,
                                            const message_names& names);

} // namespace bus::nservicebus
