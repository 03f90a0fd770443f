// The publishing side of the transport: one connection, owned by one I/O
// thread, with publisher confirms on channel 1 and declarations on a second
// channel (a failed declaration closes its channel, and must not take the
// unconfirmed publishes with it).
//
// Any thread may call the public members; each hands a request to the I/O
// thread. Sends return at once and the I/O thread calls their completion
// exactly once: when the broker confirms (ack), refuses (nack, or returns a
// mandatory send: no such queue), when operation_timeout passes, or when
// the publisher is destroyed. A nack is not final: the broker refuses a
// publish for now (a queue at its length limit with reject-publish, a
// quorum queue without a leader, or one that refused this channel while
// its leader moved, which on RabbitMQ 3.10 it keeps doing for the
// channel's life). Refused publishes wait a backoff, then go out again on
// a new channel, until their deadline. Declarations wait for their outcome, which
// comes by the same deadline. A publish succeeds only once the broker confirmed it
// (persisted it, for a durable queue). Requests from any number of callers
// are pipelined on the one connection: they share round trips to the broker
// instead of queueing behind each other's confirms, and requests from one
// thread are carried out in the order they were made.
//
// After a connection loss the thread reconnects with backoff (its
// connection_loop), declares the recorded topology again, and republishes
// what was not confirmed (at least once: the broker may have taken it before
// the connection died).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
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

#include "amqp_message.hpp"
#include "amqp_session.hpp"
#include "confirm_stall.hpp"
#include "bus/transport.hpp"
#include "connection_loop.hpp"
#include "delay_levels.hpp"
#include "log.hpp"
#include "topology.hpp"

namespace bus::detail {

class publisher final : private connection_loop::owner {
public:
  publisher(rabbitmq_settings settings, std::shared_ptr<topology_record> record,
            std::shared_ptr<const rabbitmq_logger> log);
  // Stops the thread; every request not finished yet completes with
  // errc::transport_failure before this returns. Must not run on the I/O
  // thread (inside a completion).
  ~publisher();
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  // Starts the I/O thread and waits for its first connection, so that a
  // wrong password or an unreachable broker is reported here.
  [[nodiscard]] result<void> start();

  // Each hands its message to the I/O thread and returns at once; `done`
  // runs once with the outcome, on the I/O thread (inline if the publisher
  // is closing).
  //
  // To `queue` through the default exchange, mandatory: errc::unknown_queue
  // when the broker returns it because no such queue exists.
  void async_send(const std::string& queue, outgoing_message msg, completion done);
  // To the fanout exchange of `type`, declared first (so that a type
  // nobody subscribed to is no error).
  void async_publish(const std::string& type, outgoing_message msg, completion done);
  // Into the delay levels for `units` units, then to `queue`. Declares the
  // levels and binds `queue` first (errc::unknown_queue if it does not
  // exist): a message whose queue has no binding would be dropped at the
  // last level.
  void async_send_delayed(const std::string& queue, std::uint64_t units, outgoing_message msg,
                          completion done);

  [[nodiscard]] result<void> declare_queue(const std::string& queue, const queue_options& options);
  [[nodiscard]] result<void> declare_stream(const std::string& stream,
                                            const stream_retention& retention);
  [[nodiscard]] result<void> subscribe(const std::string& queue, const std::string& type);
  [[nodiscard]] result<std::uint32_t> message_count(const std::string& queue);

  [[nodiscard]] std::uint64_t reconnects() const noexcept;
  // Publishes sent again because their confirm never came (a connection
  // lost, a channel that stalled): each may be on the broker twice. Any
  // thread.
  [[nodiscard]] std::uint64_t republished() const noexcept { return republished_.load(); }
  // Whether its connection is up right now (false before the first one and
  // from a loss until the reconnect). Any thread.
  [[nodiscard]] bool connected() const noexcept { return loop_.connected(); }
  // Whether the caller is this publisher's I/O thread (a completion).
  [[nodiscard]] bool on_io_thread() const noexcept { return loop_.on_loop_thread(); }

private:
  using clock = std::chrono::steady_clock;

  enum class kind { publish, declare_queue, declare_stream, subscribe, inspect };

  struct request {
    kind what = kind::publish;
    std::string queue;       // declare, subscribe, inspect; the destination of a send
    queue_options options;   // declare
    stream_retention retention; // declare_stream
    std::string type;        // subscribe; publish: the exchange to declare first
    std::string exchange;    // publish
    std::string routing_key; // publish
    bool mandatory = false;  // publish: a send, whose return means "no such queue"
    bool delayed = false;    // publish through the delay levels
    std::optional<outgoing_message> message;
    clock::time_point deadline;
    std::optional<std::string> returned; // why the broker returned it (basic.return)
    bool refused = false;                // the broker nacked an attempt of it
    clock::time_point sent_at;           // its last publish
    // Exactly one of the two is set, and finish() calls it once.
    completion done;                                     // everything but inspect
    std::function<void(result<std::uint32_t>)> counted; // inspect
  };
  using request_ptr = std::shared_ptr<request>;

  // Hands `r` to the I/O thread; finishes it at once if the publisher is
  // closing. Never waits.
  void submit(request_ptr r);
  // submit, then waits for the outcome.
  result<std::uint32_t> submit_and_wait(request_ptr r);
  // Calls the request's completion with `outcome`, once: the completion is
  // taken out of the request first, so a second call does nothing.
  void finish(const request_ptr& r, result<std::uint32_t> outcome);

  // All below run on the I/O thread only.

  // connection_loop::owner
  std::optional<std::string> session_opened(amqp_session& session) override;
  std::string session_lost() override;
  bool turn() override;
  clock::time_point next_deadline() const override;
  void stopped() override;

  [[nodiscard]] amqp_session* session() const noexcept { return loop_.session(); }
  void execute(const request_ptr& r);
  bool prepare_publish(const request_ptr& r);
  // Runs `declare` on the declaration channel, reopening it if a failed
  // declaration closed it. Empty: success.
  template <class Declare> amqp_status declare(Declare&& declare);
  void replay_topology();
  void read_frames();
  void on_confirm(std::uint64_t tag, bool multiple, bool ack);
  void on_return(const amqp_frame_t& frame);
  // Once the backoff after a refusal passed and nothing else is in flight:
  // a new publishing channel, and the refused publishes first in the
  // backlog, in their order.
  void republish_refused(clock::time_point now);
  // Asks, waits or moves as stall_ says (confirm_stall.hpp): a fresh
  // channel in confirm mode is the question, and becomes the publishing
  // channel when everything unconfirmed goes out again. True: it requeued
  // them.
  bool recover_stalled_confirms(clock::time_point now);
  // When the oldest unconfirmed publish was sent, if stall_ may judge the
  // channel now (not blocked, a live session; refused publishes waiting
  // or not).
  [[nodiscard]] std::optional<clock::time_point> oldest_judged() const;
  // Closes the question's channel, if there is one, without waiting.
  void drop_question();
  // Retires the publishing channel for a new one, without waiting for the
  // broker. False: the session died (or was killed: no channel numbers left).
  bool switch_publish_channel();
  // Moves refused_ and in_flight_, in publish order, to the front of the
  // backlog.
  void requeue_unconfirmed();
  void expire(clock::time_point now);
  // The error of a send whose deadline passed while the broker refused it.
  [[nodiscard]] error refusal_error(const request& r) const;

  const rabbitmq_settings settings_;
  const delay_levels levels_;
  const std::shared_ptr<topology_record> record_;
  const std::shared_ptr<const rabbitmq_logger> log_;

  std::atomic<std::uint64_t> republished_{0};

  mutable std::mutex mutex_;
  std::deque<request_ptr> incoming_; // guarded
  bool stopping_ = false;            // guarded

  // The I/O thread and its connection; after the fields it reads.
  connection_loop loop_;

  // I/O thread state.
  amqp_channel_t publish_channel_ = 0;
  amqp_channel_t declare_channel_ = 0;
  bool declare_channel_open_ = false;
  // connection.blocked (a broker resource alarm): the broker has stopped
  // reading, so a publish could block this thread inside send(); requests
  // wait in the backlog instead, where their deadlines still apply.
  bool blocked_ = false;
  std::uint64_t next_seq_ = 1;
  // Late confirms: suspected after settings' confirm_stall_timeout (by
  // default a quarter of operation_timeout, at least a second), and the
  // channel that asks the broker whether it still reads this connection (0:
  // none), which would replace the publishing channel.
  confirm_stall stall_;
  amqp_channel_t question_channel_ = 0;
  // Deadlines do not decrease along any of the three containers (each
  // request's is set under mutex_ as it is queued, and all keep the order
  // of arrival), so the front holds the earliest: expire() and
  // next_deadline() look there.
  std::map<std::uint64_t, request_ptr> in_flight_; // by publish sequence number
  // Nacked, waiting for republish_at_ (by the sequence number they had);
  // the backlog waits behind them, so that they keep their place.
  std::map<std::uint64_t, request_ptr> refused_;
  clock::time_point republish_at_{};
  int refusal_rounds_ = 0; // rounds of refusals since the last confirm: the backoff's attempt
  std::mt19937_64 random_{std::random_device{}()}; // the backoff's jitter
  std::deque<request_ptr> backlog_;                // waiting for (a) session
  std::set<std::string> exchanges_declared_;       // on this session
  bool levels_declared_ = false;                   // on this session
  std::set<std::string> delay_bound_;              // on this session
};

} // namespace bus::detail
