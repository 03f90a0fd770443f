// An envelope on the wire of AMQP 0-9-1, both ways. Out: the bus's wire form
// (wire.hpp) as string headers, plus the AMQP properties RabbitMQ's tools
// show (message-id, type, timestamp, ...), persistent. In: the headers back
// into an envelope through from_wire; what is not a valid bus message still
// becomes an envelope, so that the bus can move it out of the way.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/masstransit.hpp"
#include "bus/wire.hpp"

namespace bus::detail {

class outgoing_message {
public:
  // Fails (errc::malformed_message) when the body cannot be serialized or
  // the message cannot travel over AMQP (a header name over 255 bytes,
  // headers too large for one frame): refused here, before a half-sent
  // publish could break the connection.
  [[nodiscard]] static result<outgoing_message> from(const envelope& env);
  // `env` as a MassTransit consumer reads it: its body MassTransit's
  // envelope (masstransit::write_envelope, `urns` the type's MassTransit
  // names, `broker` the base of the addresses), content type
  // application/vnd.masstransit+json, none of the bus's headers.
  [[nodiscard]] static result<outgoing_message>
  in_masstransit_envelope(const envelope& env, std::string_view urns, std::string_view broker,
                          const masstransit::host_info& host);

  [[nodiscard]] const std::string& message_id() const noexcept { return message_id_; }

  // amqp_basic_publish of this message; returns its status. The header
  // table points into this object only for the duration of the call.
  int publish(amqp_connection_state_t conn, amqp_channel_t ch, const std::string& exchange,
              const std::string& routing_key, bool mandatory) const;

private:
  wire_message wire_;
  std::string content_type_ = "application/json";
  std::string message_id_;
  std::string type_;
  std::string correlation_id_;
  std::uint64_t timestamp_s_ = 0;
};

// Where a delivery came from: basic.deliver's exchange and routing key.
struct amqp_origin {
  std::string exchange;
  std::string routing_key;
};

// The envelope of a delivered message. Never fails.
//
// A message without the bus's headers (a foreign producer's) is read from
// its AMQP properties: message-id, type, correlation-id, reply-to (the
// response address), timestamp (sent at), and expiration counted from the
// timestamp (bus-expires-at; without a timestamp the broker's own expiry
// is all there is). Its origin and the properties a type mapping may want
// are kept as headers (header::amqp_*).
//
// A message still not valid (no id or type anywhere, a bus header that is
// not a number, ...) becomes an envelope all the same: its id is
// bus-message-id, else the AMQP message-id, else a new one made from the
// two random words; its type is empty if none was found; its body is the
// bytes as text; and the header header::wire_error says what was wrong and
// what was looked at. The bus then skips it (no type) or fails it into the
// error queue (a body that is not JSON): it is moved aside, never lost and
// never a crash.
// Headers the broker owns (x-death, x-delivery-count, ...) are left out:
// sent on again they would confuse the broker's own bookkeeping.
[[nodiscard]] envelope envelope_from_amqp(const amqp_basic_properties_t& props, amqp_bytes_t body,
                                          const amqp_origin& origin, std::uint64_t random_hi,
                                          std::uint64_t random_lo);

} // namespace bus::detail
