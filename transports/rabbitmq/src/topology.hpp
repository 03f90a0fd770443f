// The broker objects the transport declares, how it declares them, and the
// record of what it declared so that a new connection (after a broker
// restart that lost them, say) declares all of it again.
//
//   endpoint queue   durable, quorum or classic (settings.queue_type); quorum ones
//                    with x-delivery-limit and dead-lettering to the error queue
//   stream           durable, x-queue-type stream, with the retention asked for
//   message type T   a durable fanout exchange named T; subscribe(q, T) binds q to it
//   delay levels     see delay_levels.hpp; declared at the first send_delayed
//
// Every declaration is idempotent; one with arguments that differ from an
// existing object fails with 406 and closes the channel it was made on.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "amqp_session.hpp"
#include "bus/rabbitmq_settings.hpp"
#include "bus/transport.hpp"
#include "delay_levels.hpp"

namespace bus::detail {

// Thread-safe: the facade adds to it, both I/O threads read snapshots.
class topology_record {
public:
  struct snapshot {
    std::map<std::string, queue_options> queues; // as the bus declared them
    std::map<std::string, stream_retention> streams;
    std::set<std::pair<std::string, std::string>> subscriptions; // (queue, type)
    bool delay_levels = false;
    std::set<std::string> delay_destinations; // queues bound to the delivery exchange
  };

  void add_queue(const std::string& q, const queue_options& options);
  void add_stream(const std::string& s, const stream_retention& retention);
  void add_subscription(const std::string& q, const std::string& type);
  void add_delay_levels();
  void add_delay_destination(const std::string& q);
  // How `q` was declared, if this transport declared it.
  [[nodiscard]] std::optional<queue_options> find_queue(const std::string& q) const;
  // How `s` was declared, if this transport declared it as a stream.
  [[nodiscard]] std::optional<stream_retention> find_stream(const std::string& s) const;
  [[nodiscard]] snapshot copy() const;

private:
  mutable std::mutex mutex_;
  snapshot data_;
};

// Each declaration runs RPCs on `ch` of `s`; a failure says whether it took
// the channel or the connection with it.
// A queue of settings.queue_type; a quorum queue carries the delivery limit
// and dead-letters to dead_letter_queue(queue, options, settings). A
// temporary queue (a bus's own reply queue) is a classic one that the
// broker deletes once unused for temporary_queue_expiry. A 406 (the queue
// exists with other arguments) says what the bus wanted and how to resolve it.
amqp_status declare_endpoint_queue(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                                   const queue_options& options,
                                   const rabbitmq_settings& settings);
// How long a temporary queue outlives its last consumer: long enough for a
// reconnect after a broker restart (the transport declares it again then),
// short enough that processes that come and go leave nothing for long.
inline constexpr std::int64_t temporary_queue_expiry_ms = 10 * 60 * 1000;
// Where a quorum queue's messages go at the delivery limit: the endpoint's
// error queue, as the bus named it in `options`. A queue declared without
// one (by a tool, or an older bus) falls back to names: for an endpoint
// queue Q that is Q + error_queue_suffix; for its skipped queue
// (Q + skipped_queue_suffix) too; an error queue (a name ending in
// error_queue_suffix) is its own target: declare_endpoint_queue gives it
// no delivery limit, so nothing ever dead-letters it.
[[nodiscard]] std::string dead_letter_queue(const std::string& queue, const queue_options& options,
                                            const rabbitmq_settings& settings);
// A stream queue (issue 27): durable, x-queue-type stream, with
// x-max-length-bytes and x-max-age where the retention sets them. A 406
// (a queue of that name exists, or a stream with another retention) says
// what the bus wanted.
amqp_status declare_stream_queue(amqp_session& s, amqp_channel_t ch, const std::string& stream,
                                 const stream_retention& retention);
// Passive: fails with 404 if `queue` does not exist; else its ready count.
amqp_status inspect_queue(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                          std::uint32_t& message_count);
amqp_status declare_type_exchange(amqp_session& s, amqp_channel_t ch, const std::string& type);
amqp_status bind_subscription(amqp_session& s, amqp_channel_t ch, const std::string& queue,
                              const std::string& type);
amqp_status declare_delay_levels(amqp_session& s, amqp_channel_t ch, const delay_levels& levels);
amqp_status bind_delay_destination(amqp_session& s, amqp_channel_t ch, const delay_levels& levels,
                                   const std::string& queue);

} // namespace bus::detail
