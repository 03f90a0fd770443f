// MassTransit's wire convention (issue 25), the pure part: its JSON
// envelope (content type application/vnd.masstransit+json) read into the
// bus's envelope, its names for message types and its addresses. Facts
// from MassTransit 8.5 on RabbitMQ: tests/interop/golden/ has the formats
// and where each one comes from.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/fault.hpp"

namespace bus::masstransit {

inline constexpr std::string_view content_type = "application/vnd.masstransit+json";

// What of MassTransit's envelope has no field of its own in the bus's,
// kept as headers: its correlation and request ids (a reply to a
// MassTransit request must carry the request id back), the conversation's
// first message, the message's type names (all of them, ';'-separated, as
// sent) and the response address as the URI it was.
namespace header {
inline constexpr std::string_view correlation_id = "masstransit-correlation-id";
inline constexpr std::string_view request_id = "masstransit-request-id";
inline constexpr std::string_view initiator_id = "masstransit-initiator-id";
inline constexpr std::string_view message_types = "masstransit-message-type";
inline constexpr std::string_view response_address = "masstransit-response-address";
// Set by the bus on a message it sends in MassTransit's convention (a
// handler's send, publish or reply on an endpoint that speaks it, or a
// fault): the MassTransit names of its type, ';'-separated, its own first. A transport that knows
// the convention writes the message in MassTransit's envelope instead of the bus's form, and
// publishes it to the type's exchange; the header itself is not sent.
inline constexpr std::string_view write_as = "masstransit-write-as";
} // namespace header

// MassTransit's message type names ("urn:message:Contracts:OrderPlaced")
// and the registered names they stand for, one to one.
class message_names {
public:
  message_names() = default;
  // errc::invalid_configuration for a name that is not urn:message:..., or
  // a URN or registered name given twice.
  [[nodiscard]] static result<message_names>
  from(const std::vector<std::pair<std::string, std::string>>& urn_to_registered);

  // The registered name of the first of `urns` that has one, or empty:
  // MassTransit lists the type, then its base types and interfaces.
  [[nodiscard]] std::string registered_of(const std::vector<std::string>& urns) const;
  // The URN of a registered name, or empty.
  [[nodiscard]] std::string urn_of(std::string_view registered) const;
  [[nodiscard]] const std::map<std::string, std::string>& urns() const noexcept {
    return by_urn_;
  }

private:
  std::map<std::string, std::string> by_urn_;
  std::map<std::string, std::string, std::less<>> by_registered_;
};

// The exchange MassTransit publishes a type to, as its RabbitMQ name
// formatter writes it: "Contracts:OrderPlaced" for
// "urn:message:Contracts:OrderPlaced", "MassTransit:Fault--Contracts:OrderPlaced--"
// for "urn:message:MassTransit:Fault[[Contracts:OrderPlaced]]". Empty for a
// name without the prefix.
[[nodiscard]] std::string exchange_of(std::string_view urn);

// The names of MassTransit's Fault<T> for a T named `urn`, as a MassTransit
// consumer of Fault<T> expects them in messageType, ';'-separated: the
// fault type's own ("urn:message:MassTransit:Fault[[Contracts:OrderPlaced]]"),
// then the generic one ("urn:message:MassTransit:Fault").
[[nodiscard]] std::string fault_urns(std::string_view urn);

// The queue or exchange an address names: "orders" for
// "rabbitmq://localhost/orders", "rabbitmq://mq:5673/sales/orders?temporary=true"
// or "queue:orders"; empty for an empty address.
[[nodiscard]] std::string address_name(std::string_view address);

// The bus's envelope of `received`, whose body is a MassTransit envelope:
// messageId as its id, conversationId as its correlation id (the bus's
// correlation is the conversation), the addresses' names, sentTime as its
// time sent, expirationTime as bus-expires-at, MassTransit's headers (as
// text) over the received ones, the ids and names above as headers, the
// inner message as its body, and as its type the registered name of the
// first of its messageType names that `names` knows (else empty: the
// endpoint skips it, and the header lists the names it had).
// errc::malformed_message, saying what, for a body that is not one: not
// JSON, no messageId, no message, a time that does not parse.
[[nodiscard]] result<envelope> read_envelope(const envelope& received,
                                             const message_names& names);

// Who wrote an envelope, MassTransit's "host" block: shown by its tools
// beside a message. this_host() fills it for this process.
struct host_info {
  std::string machine_name;
  std::string process_name;
  long process_id = 0;
  std::string assembly;                 // the program
  std::string assembly_version;         // its version
  std::string framework_version;        // what it runs on ("C++17, CAF 0.17.6")
  std::string operating_system_version; // "Linux 6.1.0"
};

// This process as MassTransit's host block names it: the host's name, the
// program's name and id, the bus's version, the kernel's name and release.
// Read from the system once.
[[nodiscard]] const host_info& this_host();

// The MassTransit envelope of `msg` as JSON text, for a MassTransit
// consumer, in the field order MassTransit writes, null where there is no
// value (as its System.Text.Json serializer writes them):
// - messageType: `urns`, the type's MassTransit names, ';'-separated, its
//   own first (a fault lists two, see fault_urns());
// - messageId, and conversationId from the correlation id;
// - correlationId, requestId and initiatorId from the masstransit-*
//   headers (a reply carries its request's requestId back);
// - the addresses as URIs: `broker` ("rabbitmq://mq/", or with the vhost,
//   "rabbitmq://mq/orders/") and the queue name; destinationAddress is the
//   type's exchange for a publish (no destination); responseAddress is the
//   URI a MassTransit request gave, if it did;
// - sentTime, and expirationTime from bus-expires-at (ISO 8601, UTC);
// - headers: the message's own (not the bus's bus-*, amqp-*, masstransit-*
//   or a broker's x-*), and its traceparent as MT-Activity-Id;
// - message: the body, which must be JSON (errc::malformed_message if not).
[[nodiscard]] result<std::string> write_envelope(const envelope& msg, std::string_view urns,
                                                 std::string_view broker, const host_info& host);

// Headers a fault carries in MassTransit's envelope, as its FaultPipe sets
// them: the retries made in the delivery that failed last, and the
// redeliveries before it.
namespace header {
inline constexpr std::string_view fault_retry_count = "MT-Fault-RetryCount";
inline constexpr std::string_view fault_redelivery_count = "MT-Fault-RedeliveryCount";
} // namespace header

// The message of MassTransit's Fault<T> for `failed`, a message of the type
// MassTransit names `urn` that failed for good, as JSON text in the field
// order MassTransit writes: faultId (`fault_id`), faultedMessageId,
// timestamp (when it failed), exceptions (one: its type, message and the
// endpoint as source; C++ keeps no stack trace, so null), host,
// faultMessageTypes ([urn]) and the failed message itself.
// errc::malformed_message for a body that is not JSON.
[[nodiscard]] result<std::string> write_fault(const envelope& failed, std::string_view urn,
                                              const fault_details& fault, std::string_view fault_id,
                                              const host_info& host);

} // namespace bus::masstransit
