// The consuming side of the transport: one connection, owned by one I/O
// thread, with one channel per consumed queue (its prefetch is the
// consumer's max_unacked; a channel error ends that consumer only).
//
// Delivery handlers run on the I/O thread. ack and reject come from other
// threads (actors): they are checked and queued here, and the I/O thread,
// woken through an eventfd, sends them on the channel the delivery came
// from. rabbitmq-c is never called from two threads on one connection.
//
// Acks are sent in batches: the I/O thread takes every settlement queued
// since it last looked, and acks that cover a run of deliveries with none
// open or rejected among them go out as one basic.ack with `multiple`
// (ack_window.hpp); the others go out alone. A reject is never overtaken by
// an ack queued after it, nor covered by one queued before it.
//
// A stream is read by a link of its own per reader, keyed by the
// reader's name: basic.consume with x-stream-offset, each delivery's offset
// from its x-stream-offset header. RabbitMQ starts a reader at the start of
// the chunk that holds the offset asked for, so what comes before it is
// acknowledged here and never handed out; a channel opened again (after a
// lost connection) reads on after the last offset handed out, so a reader
// neither skips nor gets twice what this process read.
//
// Each delivery gets a transport tag, unique for the life of the
// transport, that maps to (channel incarnation, broker delivery tag). When
// a channel or the connection dies, its queue deliveries are forgotten
// with it: settling one is an error and nothing is sent, because the same
// broker tag on a new channel names another message. The broker redelivers
// what that channel had not settled. A stream's deliveries are kept: the
// reader reads on past them, so they are never delivered again, and their
// endings still move the reader's saved offset; their acks go nowhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>

#include "ack_window.hpp"
#include "amqp_session.hpp"
#include "bus/transport.hpp"
#include "connection_loop.hpp"
#include "log.hpp"
#include "topology.hpp"

namespace bus::detail {

class consumer_pump final : private connection_loop::owner {
public:
  consumer_pump(rabbitmq_settings settings, std::shared_ptr<topology_record> record,
                std::shared_ptr<const rabbitmq_logger> log);
  // Stops the thread and closes the connection: the broker requeues every
  // delivery not settled. Must not run on the I/O thread (in a handler).
  ~consumer_pump();
  consumer_pump(const consumer_pump&) = delete;
  consumer_pump& operator=(const consumer_pump&) = delete;

  // Starts the I/O thread and waits for its first connection.
  [[nodiscard]] result<void> start();

  // Waits for the broker's consume-ok (or an error, or operation_timeout).
  [[nodiscard]] result<void> consume(const std::string& queue, std::size_t max_unacked,
                                     delivery_handler on_delivery);
  // Reads `stream` as `reader` (transport::consume_stream); cancel(reader)
  // ends it.
  [[nodiscard]] result<void> consume_stream(const std::string& reader, const std::string& stream,
                                            const stream_start& start, std::size_t max_unacked,
                                            delivery_handler on_delivery);
  // Returns once the handler of `queue` (or of a stream's reader) can no
  // longer be called.
  void cancel(const std::string& queue);
  // The highest offset of `stream` handed to a reader of this process;
  // none before the first. Any thread.
  [[nodiscard]] std::optional<std::uint64_t> stream_tail(const std::string& stream) const;
  // Queues the settlement for the I/O thread and returns at once; an error
  // if `tag` is not outstanding or its channel has died since.
  [[nodiscard]] result<void> settle(std::uint64_t tag, bool ack, bool requeue);
  // Whether `tag` is outstanding on a channel that is still open.
  [[nodiscard]] bool settleable(std::uint64_t tag) const;
  // Deliveries handed out and not settled (see rabbitmq_transport).
  [[nodiscard]] std::size_t unsettled() const;

  [[nodiscard]] std::uint64_t reconnects() const noexcept;
  // Whether its connection is up right now (false before the first one and
  // from a loss until the reconnect). Any thread.
  [[nodiscard]] bool connected() const noexcept { return loop_.connected(); }
  // Whether the caller is this pump's I/O thread (a delivery handler).
  [[nodiscard]] bool on_io_thread() const noexcept { return loop_.on_loop_thread(); }

private:
  using clock = std::chrono::steady_clock;

  struct consume_command {
    std::string queue;  // the link's name: the queue, or a stream's reader
    std::string source; // what the broker delivers from: the queue, or the stream
    std::optional<stream_start> stream_from; // set: a stream's reader
    std::size_t max_unacked = 0;
    std::shared_ptr<const delivery_handler> handler;
    clock::time_point deadline;
    std::shared_ptr<std::promise<result<void>>> done;
  };
  struct cancel_command {
    std::string queue;
    std::shared_ptr<std::promise<void>> done;
  };
  struct settle_command {
    std::uint64_t incarnation = 0;
    amqp_channel_t channel = 0;
    std::uint64_t broker_tag = 0;
    bool ack = true;
    bool requeue = false;
  };
  using command = std::variant<consume_command, cancel_command, settle_command>;

  struct outstanding {
    std::uint64_t incarnation = 0;
    amqp_channel_t channel = 0;
    std::uint64_t broker_tag = 0;
    // A stream's delivery outlives its channel: nothing delivers it again
    // (the reader consumes again past it), so its ending must still reach
    // the reader's position; only its ack, which frees a place in a dead
    // channel's prefetch, goes nowhere (handle(settle_command&)).
    bool from_stream = false;
  };

  // One consumed (or once consumed) queue, or a stream's reader, on the I/O
  // thread.
  struct link {
    std::string source; // the broker queue it consumes
    // A stream's reader: where its next basic.consume starts, moved past
    // each offset handed out, and the offset below which a delivery is
    // the rest of a chunk, acknowledged and dropped.
    std::optional<stream_start> stream_from;
    std::uint64_t skip_below = 0;
    std::size_t max_unacked = 0;
    std::shared_ptr<const delivery_handler> handler; // null: not wanted (never, or cancelled)
    amqp_channel_t channel = 0;                      // 0: none open on this session
    std::uint64_t incarnation = 0;
    std::string consumer_tag;
    bool consuming = false;       // basic.consume active on `channel`
    ack_window acks;              // the deliveries of `channel` and their settlements
    clock::time_point retry_at{}; // when to re-consume after a failure
    int failed_consumes = 0;      // since it last consumed: the backoff's attempt
  };

  // All below run on the I/O thread only.

  // connection_loop::owner
  std::optional<std::string> session_opened(amqp_session& session) override;
  std::string session_lost() override;
  bool turn() override;
  clock::time_point next_deadline() const override;
  void stopped() override;
  std::string back_note() const override;

  [[nodiscard]] amqp_session* session() const noexcept { return loop_.session(); }
  void handle(consume_command& c);
  void handle(cancel_command& c);
  void handle(settle_command& c);
  // basic.consume for `l`'s source on its channel (opened if needed), a
  // stream's from its stream_from. Empty: success.
  amqp_status establish(link& l);
  void drop_channel(link& l);
  // Forgets the queue deliveries of the channels `of_channel` picks: the
  // broker has them again. A stream's are kept (outstanding::from_stream).
  void forget_deliveries(const std::function<bool(const outstanding&)>& of_channel);
  void schedule_retry(const std::string& queue, link& l, const std::string& why);
  void recover_links(clock::time_point now);
  void read_frames();
  void on_delivery(const amqp_frame_t& frame);
  void on_broker_cancel(const amqp_frame_t& frame);
  link* link_of_channel(amqp_channel_t ch);
  // Rejects (requeue) a delivery of `l`'s channel that was never handed
  // out, or whose handler threw: sends the acks queued before it first.
  // A stream's reader acks it instead (see handle(settle_command&)).
  void reject_now(link& l, std::uint64_t broker_tag);
  // basic.reject with requeue, after the acks queued before it.
  void requeue_on_wire(link& l, std::uint64_t broker_tag);
  // Acknowledges a delivery of `l`'s channel through its window.
  void queue_ack(link& l, std::uint64_t broker_tag);
  // Sends the acks queued on `l` / on every link (ack_window::flush).
  void flush_acks(link& l);
  void flush_all_acks();
  void fail_waiting(clock::time_point now);
  void forget_consumed(const std::string& queue);
  [[nodiscard]] result<void> submit(consume_command c);
  // A stream reader's delivery: its offset, or none if it must not be
  // handed out (dropped here: before the offset asked for, or no offset).
  std::optional<std::uint64_t> stream_offset_of(link& l, const amqp_basic_properties_t& p,
                                                std::uint64_t broker_tag);

  const rabbitmq_settings settings_;
  const std::shared_ptr<topology_record> record_;
  const std::shared_ptr<const rabbitmq_logger> log_;

  mutable std::mutex mutex_;
  std::deque<command> commands_;                               // guarded
  std::unordered_map<std::uint64_t, outstanding> outstanding_; // guarded
  std::set<std::string> consumed_;                             // guarded: queues with a consumer
  std::unordered_map<std::string, std::uint64_t> stream_tails_; // guarded: stream -> offset
  bool stopping_ = false;                                      // guarded

  // The I/O thread and its connection; after the fields it reads.
  connection_loop loop_;

  // I/O thread state.
  std::map<std::string, link> links_;
  std::deque<consume_command> waiting_; // consumes waiting for a connection
  std::uint64_t next_tag_ = 1;
  std::uint64_t next_incarnation_ = 1;
  std::mt19937_64 random_{std::random_device{}()};
};

} // namespace bus::detail
