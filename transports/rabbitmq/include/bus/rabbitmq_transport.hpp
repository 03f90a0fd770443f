// The RabbitMQ transport: the bus on a broker, so that several processes
// compete for an endpoint's queue and delayed redeliveries outlive the
// process that scheduled them. Built on rabbitmq-c; docs/rabbitmq.md says
// how the bus maps onto queues, exchanges and delay levels.
//
// Thread-safe: any thread may call any member. Two connections, each owned
// by its own I/O thread: one publishes (with publisher confirms) and
// declares, one consumes. Delivery handlers run on the consuming thread;
// ack and reject are handed to it (and acks coalesced there where that
// acknowledges nothing else). The completions of async_send, async_publish
// and async_send_delayed run on the publishing thread. Both threads
// reconnect on their own, with backoff, after a connection loss or a
// broker restart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bus/header_names.hpp"
#include "bus/rabbitmq_settings.hpp"
#include "bus/transport.hpp"

namespace bus {

// Set on an envelope built from a message that was not a valid bus message
// (no id or type found, a malformed bus header): what was wrong with it.
inline constexpr std::string_view rabbitmq_wire_error_header = header::wire_error;

// A foreign producer's message carries header::amqp_* (bus/header_names.hpp).

class rabbitmq_transport final : public transport {
public:
  // Validates the settings and opens both connections before it returns:
  // a wrong password, an unreachable broker or a refused certificate is an
  // errc::transport_failure here, within the connect timeout, never a hang.
  // Bad settings are errc::invalid_configuration. The password appears in
  // no message.
  [[nodiscard]] static result<std::shared_ptr<rabbitmq_transport>>
  connect(rabbitmq_settings settings);

  // Closes both connections: RabbitMQ requeues every delivery not settled,
  // calls still waiting fail, and every asynchronous send not completed yet
  // completes with errc::transport_failure before this returns. When the
  // last reference goes inside a completion or a delivery handler (one
  // that held the transport's owner), that happens on a thread of its own
  // once the callback returned, and this returns at once.
  ~rabbitmq_transport() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "rabbitmq"; }
  // durable, delayed_delivery and streams always; native_delivery_count for quorum
  // queues (x-delivery-count). The bus keeps its own count
  // (bus-delivery-count) on every queue type regardless.
  [[nodiscard]] transport_capabilities capabilities() const noexcept override;

  // A durable queue of the settings' queue type. errc::invalid_configuration
  // if it exists with other arguments (another queue type, say).
  result<void> declare_queue(const std::string& queue) override;
  // A quorum queue dead-letters at its delivery limit to
  // options.dead_letter_queue (the bus passes its endpoint's error queue),
  // else to the name the suffixes of rabbitmq_settings give. A temporary
  // queue is a classic one with x-expires (deleted 10 min after its last use).
  result<void> declare_queue_with(const std::string& queue, const queue_options& options) override;
  // Binds `queue` to the fanout exchange of `message_type`.
  result<void> subscribe(const std::string& queue, const std::string& message_type) override;
  // Prefetch = max_unacked (at most 65535), manual acknowledgement.
  result<void> consume(const std::string& queue, std::size_t max_unacked,
                       delivery_handler on_delivery) override;
  void cancel(const std::string& queue) override;

  // Streams (RabbitMQ 3.9 and later): a durable queue with x-queue-type
  // stream, x-max-length-bytes and x-max-age as the retention sets them
  // (applied by whole segments). errc::invalid_configuration if a queue of
  // that name exists, or the stream with another retention.
  result<void> declare_stream(const std::string& stream,
                              const stream_retention& retention) override;
  // A stream this transport declared.
  [[nodiscard]] bool is_stream(const std::string& name) const override;
  // basic.consume with x-stream-offset and a prefetch of max_unacked;
  // RabbitMQ keeps no offset of an AMQP 0.9.1 reader: `start` is where
  // it reads from each time it starts.
  result<void> consume_stream(const std::string& reader, const std::string& stream,
                              const stream_start& start, std::size_t max_unacked,
                              delivery_handler on_delivery) override;
  // Over AMQP 0.9.1 the broker tells no stream's last offset: this is the
  // highest offset delivered to a reader of this process, so a reader's
  // lag counts what it was given and has not settled.
  [[nodiscard]] std::optional<std::uint64_t> stream_tail(const std::string& stream) const override;
  // Returns once the broker confirmed the message (persistent: it is on
  // disk); errc::unknown_queue if no such queue exists.
  result<void> send(const std::string& queue, envelope msg) override;
  // Through the delay levels; confirmed like send. A delay is rounded up
  // to whole delay units; errc::invalid_configuration past the longest one
  // the levels hold.
  result<void> send_delayed(const std::string& queue, envelope msg, duration delay) override;
  result<void> publish(envelope msg) override;
  // The three above without waiting: the message is handed to the
  // publishing connection's I/O thread and the call returns. `done` runs
  // exactly once, on that thread, when the broker confirms the message,
  // refuses it (a nack; a send to a queue that does not exist is
  // errc::unknown_queue), when operation_timeout passes without a confirm
  // (errc::transport_failure; the message may still arrive), or when the
  // transport is destroyed first (errc::transport_failure). A request the
  // transport refuses before it leaves (a bad name, a delay too long)
  // completes inline, before the call returns. Any number of them may be
  // in flight, from any number of threads, pipelined on one connection;
  // those from one thread go out in the order they were made. After a
  // connection loss the unconfirmed ones are published again (at least
  // once) and complete when the new connection confirms them, or by their
  // deadline. The blocking forms above are these and a wait.
  void async_send(const std::string& queue, envelope msg, completion done) override;
  void async_send_delayed(const std::string& queue, envelope msg, duration delay,
                          completion done) override;
  void async_publish(envelope msg, completion done) override;
  // Hand the settlement to the consuming connection and return. An error if
  // the tag is not outstanding, or if its channel died since it was
  // delivered: that message comes again, and an ack sent on another
  // channel would settle a different one.
  // False once the channel `tag` came over has closed (a lost connection):
  // RabbitMQ delivers that message again.
  [[nodiscard]] bool settleable(std::uint64_t tag) const override;
  result<void> ack(std::uint64_t tag) override;
  result<void> reject(std::uint64_t tag, bool requeue) override;

  // The error queues, read, replayed and deleted through a connection of
  // their own, opened at the first call (bus/failed_messages.hpp). A read is
  // a browse given back at once; on a quorum queue the broker counts it as
  // a delivery and puts the messages behind the others, so a read is
  // answered from the last one while the queue's depth stays the same (up
  // to 30 s).
  [[nodiscard]] error_queue_access* error_queues() noexcept override;

  // Inspection, for tests and operators.

  // Messages ready on `queue` (not counting delivered, unsettled ones).
  [[nodiscard]] result<std::size_t> message_count(const std::string& queue);
  // Deliveries handed to a handler and not settled yet, over channels
  // still open: a queue's that went stale with its connection no longer
  // counts. A stream's counts until settled: nothing delivers it again.
  [[nodiscard]] std::size_t unsettled() const;
  // How often the two connections came back after a loss, together.
  [[nodiscard]] std::uint64_t reconnects() const noexcept;
  // The broker's URL without the password.
  [[nodiscard]] std::string describe() const;
  // Connected when both connections are up; `detail` names the one down.
  [[nodiscard]] transport_health health() const override;

private:
  struct impl;
  explicit rabbitmq_transport(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

} // namespace bus
