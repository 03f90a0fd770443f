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
inline constexpr std::string_view related_to = "NServiceBus.RelatedTo";
inline constexpr std::string_view originating_endpoint = "NServiceBus.OriginatingEndpoint";
inline constexpr std::string_view originating_machine = "NServiceBus.OriginatingMachine";
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
  // The NServiceBus name of a registered name (the first given), or empty.
  [[nodiscard]] std::string type_of(std::string_view registered) const;
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& types() const noexcept {
    return by_type_;
  }

private:
  std::map<std::string, std::string, std::less<>> by_type_;
  std::map<std::string, std::string, std::less<>> by_registered_;
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

// Why a message goes out, NServiceBus's MessageIntent.
enum class intent { send, publish, reply };

// Who writes a message in NServiceBus's convention: the endpoint (its
// queue, where replies come back) and the machine it runs on.
struct sender {
  std::string endpoint;
  std::string machine;
};

// `msg` with the headers an NServiceBus endpoint reads, as NServiceBus
// writes them (the golden nservicebus_headers.json): its id, `type` (the
// .NET type's full name) as the enclosed type, JSON as its content type,
// its correlation id as the conversation, the intent, the sender as the
// originating endpoint, machine and reply address, its time sent in
// NServiceBus's format and its expiry as TimeToBeReceived. A message sent
// while handling `handled` (else null) is related to it, and a reply
// carries its id back as the correlation id, as NServiceBus's callbacks
// match replies; other messages correlate to their own id, or to what the
// handled one correlated to. Not written: NServiceBus.Version (the bus is
// not NServiceBus) and the host id.
[[nodiscard]] envelope with_headers(envelope msg, std::string_view type, intent why,
                                    const sender& from, const envelope* handled);

// The exchange a message with NServiceBus's headers is published to: its
// enclosed type's (exchange_of), for a message whose intent is Publish;
// else empty.
[[nodiscard]] std::string publish_exchange(const envelope& msg);

} // namespace bus::nservicebus
