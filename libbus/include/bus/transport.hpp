// The transport port: what the bus needs from whatever carries its
// messages. transports/ implements it (in memory, RabbitMQ); the runtime
// uses only this interface. No CAF here: a transport knows nothing of actors.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/stream.hpp"

namespace bus {

class error_queue_access; // bus/failed_messages.hpp

// Envelopes travel shared and immutable from the transport to the handler;
// whoever needs a changed one (a redelivery, an error-queue copy) copies it.
using envelope_ptr = std::shared_ptr<const envelope>;

struct delivery {
  std::uint64_t tag = 0; // unique within the transport; what ack and reject take
  std::string queue;
  envelope_ptr message;
  bool redelivered = false; // the transport delivered this message before
  // Its offset in the stream, for a stream reader's delivery
  // (consume_stream); none for a queue's.
  std::optional<std::uint64_t> stream_offset;
};

// How an asynchronous operation ended, called exactly once, on any thread:
// on the transport's I/O thread once the broker has confirmed or refused,
// or inline before the call returns when the transport finishes at once
// (in memory). Like a delivery handler it must not block and must not call
// back into the transport: it hands the result on (to an actor's mailbox).
using completion = std::function<void(result<void>)>;

// A completion for one of several messages sent in one call: `index` is
// its place in the call's list. Called once for each, as `completion` is.
using indexed_completion = std::function<void(std::size_t index, result<void>)>;

// Called for each delivery, on any thread. It must not block and must not
// call back into the transport: it hands the delivery on (to an actor's
// mailbox) and returns.
using delivery_handler = std::function<void(delivery)>;

// How a queue is declared, beyond its name: what the bus knows of it that a
// broker needs at declaration.
struct queue_options {
  // The queue serves this process only (a bus's own reply queue): a broker
  // may delete it once nobody has used it for a while, so that processes
  // that come and go leave none behind.
  bool temporary = false;
  // Where a broker dead-letters what it gives up on (a quorum queue's
  // delivery limit): the error queue of the endpoint the queue belongs to.
  // Empty: the transport's own rule (RabbitMQ: the name plus a suffix).
  std::string dead_letter_queue;
};

struct transport_capabilities {
  bool durable = false;               // messages survive a restart of this process
  bool native_delivery_count = false; // the transport counts redeliveries itself
  bool delayed_delivery = false;      // send_delayed() holds messages outside this process
  bool streams = false;               // declare_stream() and consume_stream() work
};

// A queue on the broker whose messages should move and do not: a RabbitMQ
// delay level holding messages past their delay that it never forwards
// (docs/rabbitmq.md, "Stranded delay levels"). Nothing is lost, but what it
// holds waits until an operator acts: `remedy` says how.
struct stalled_queue {
  std::string queue;
  std::uint64_t messages = 0;              // held and not moving
  std::chrono::milliseconds stalled_for{}; // since they last moved
  std::string remedy;                      // a command an operator can run
};

// Whether the transport can reach what carries its messages right now, for
// health checks and metrics. `detail` names what is down when not connected.
struct transport_health {
  bool connected = true;
  std::uint64_t reconnects = 0; // connections re-established after a loss, since it started
  // Messages published again because their confirm never came (a lost
  // connection, a stalled channel): each may be on the broker twice.
  std::uint64_t republished = 0;
  std::string detail;
  // What the transport watches on the broker and found stalled; empty when
  // all moves (or it watches nothing).
  std::vector<stalled_queue> stalled;
};

class transport {
public:
  virtual ~transport() = default;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual transport_capabilities capabilities() const noexcept = 0;

  // Creates `queue` unless it exists. Idempotent.
  virtual result<void> declare_queue(const std::string& queue) = 0;
  // declare_queue with what the bus knows of the queue. This default
  // ignores the options: right for a transport that has no use for them
  // (in memory); a broker transport overrides it.
  virtual result<void> declare_queue_with(const std::string& queue, const queue_options& options) {
    (void)options;
    return declare_queue(queue);
  }

  // errc::unknown_queue, naming `queue`, if the transport knows that it does
  // not exist; success if it does, or if the transport cannot tell without
  // waiting on the network (this default: a send then finds out). Never
  // blocks. For checks at the call, such as a scheduled send's.
  [[nodiscard]] virtual result<void> check_queue(const std::string& queue) const {
    (void)queue;
    return {};
  }

  // Every later publish of `message_type` reaches `queue` too (fan-out).
  virtual result<void> subscribe(const std::string& queue, const std::string& message_type) = 0;

  // Starts delivering the messages of `queue` to `on_delivery`, with at most
  // `max_unacked` of them delivered and neither acknowledged nor rejected.
  // One consumer per queue; errc::duplicate if there is one already.
  virtual result<void> consume(const std::string& queue, std::size_t max_unacked,
                               delivery_handler on_delivery) = 0;

  // Stops deliveries from `queue` (or to a stream's `reader`, see
  // consume_stream): once cancel returns, its handler is not
  // called again. Deliveries already made stay outstanding until they are
  // acknowledged or rejected. Must not be called from inside a handler.
  virtual void cancel(const std::string& queue) = 0;

  // Puts `msg` on `queue`, or appends it to a stream of that name;
  // errc::unknown_queue if neither was declared.
  virtual result<void> send(const std::string& queue, envelope msg) = 0;

  // Streams (bus/stream.hpp): append-only logs that many readers read,
  // each from its own offset; send() and publish() append to them, and
  // settling a reader's delivery removes nothing. Only for a transport
  // whose capabilities() say streams; these defaults refuse.
  //
  // Creates `stream` unless it exists, keeping what `retention` allows.
  // A queue of that name: errc::invalid_configuration.
  virtual result<void> declare_stream(const std::string& stream,
                                      const stream_retention& retention) {
    (void)retention;
    return error{errc::invalid_configuration,
                 std::string(name()) + " has no streams (cannot declare '" + stream + "')"};
  }
  // Whether `name` is a stream this transport declared (or knows of):
  // for checks at the call, such as a deferred send's. Never blocks. This
  // default knows none.
  [[nodiscard]] virtual bool is_stream(const std::string& name) const {
    (void)name;
    return false;
  }
  // The offset of the last message appended to `stream`, as far as this
  // transport knows without asking anyone (for a reader's lag); none when
  // it does not know, or the stream is empty. Never blocks. This default
  // knows none.
  [[nodiscard]] virtual std::optional<std::uint64_t> stream_tail(const std::string& stream) const {
    (void)stream;
    return std::nullopt;
  }
  // Starts delivering the messages of `stream` to `on_delivery`, in offset
  // order, from `start`, with at most `max_unacked` delivered and not yet
  // settled, each delivery carrying its stream_offset. `reader` names this
  // consumption (an endpoint): several readers read one stream, each on its
  // own; cancel(reader) ends it as cancel(queue) ends a queue's.
  // Settling a reader's delivery, by ack or reject, frees its place in
  // max_unacked; a reject's requeue puts nothing back (the message stays
  // in the stream: a reader that starts again from an offset before it
  // reads it again). errc::duplicate for a reader that reads already.
  virtual result<void> consume_stream(const std::string& reader, const std::string& stream,
                                      const stream_start& start, std::size_t max_unacked,
                                      delivery_handler on_delivery) {
    (void)reader;
    (void)start;
    (void)max_unacked;
    (void)on_delivery;
    return error{errc::invalid_configuration,
                 std::string(name()) + " has no streams (cannot read '" + stream + "')"};
  }

  // Puts `msg` on `queue` once `delay` has passed, held by the transport
  // (a broker), so that it survives the death of this process. Only for a
  // transport whose capabilities() say delayed_delivery; the bus holds
  // delays itself otherwise. This default refuses.
  virtual result<void> send_delayed(const std::string& queue, envelope msg, duration delay) {
    return error{errc::transport_failure,
                 std::string(name()) + " has no delayed delivery (cannot hold message "
                   + msg.message_id + " for " + to_hms(delay) + " on '" + queue + "')"};
  }

  // Puts a copy of `msg` on every queue subscribed to its type. A type
  // nobody subscribed to is not an error: events may have no listener.
  virtual result<void> publish(envelope msg) = 0;

  // The asynchronous forms of send, send_delayed and publish: they return
  // at once and report through `done` what the blocking form would have
  // returned, so that an actor never waits on the network and one thread
  // can keep many confirmed sends in flight. Calls from one thread are
  // carried out in the order they were made. These defaults run the
  // blocking form and complete inline: right for a transport that never
  // waits (in memory); a broker transport overrides them.
  virtual void async_send(const std::string& queue, envelope msg, completion done) {
    done(send(queue, std::move(msg)));
  }
  virtual void async_send_delayed(const std::string& queue, envelope msg, duration delay,
                                  completion done) {
    done(send_delayed(queue, std::move(msg), delay));
  }
  virtual void async_publish(envelope msg, completion done) { done(publish(std::move(msg))); }

  // async_send for a message the caller shares and keeps: it stays whole
  // whatever the outcome, so a refused one can be offered again (the
  // scheduler returning a redelivery). This default copies it into
  // async_send; a transport that keeps envelopes shared takes it as it is.
  virtual void async_send_shared(const std::string& queue, envelope_ptr msg, completion done) {
    async_send(queue, envelope(*msg), std::move(done));
  }

  // async_send_shared for several messages to one queue, in their order;
  // `done` is called once for each. This default sends them one by one; a
  // transport that takes many in one step overrides it (in memory: one
  // lock for all of them, where the scheduler returning a million
  // redeliveries took it a million times).
  virtual void async_send_shared_all(const std::string& queue, const std::vector<envelope_ptr>& msgs,
                                     indexed_completion done) {
    auto shared = std::make_shared<const indexed_completion>(std::move(done));
    for (std::size_t i = 0; i < msgs.size(); ++i)
      async_send_shared(queue, msgs[i], [shared, i](result<void> r) { (*shared)(i, std::move(r)); });
  }

  // Whether delivery `tag` can still be settled. False once the connection
  // or channel it came over is gone: the broker delivers its message again,
  // so whoever holds it must neither run it nor end it (that would give it
  // a second life beside the new delivery). Safe to call from any thread.
  // A stream's delivery never goes stale: nothing delivers it again (the
  // reader goes on past it), so its ending must still move the reader's
  // position, and its settling may do nothing on the wire.
  // A transport whose deliveries cannot go stale keeps this default.
  [[nodiscard]] virtual bool settleable(std::uint64_t /*tag*/) const { return true; }

  // Settles a delivery: done with it for good, or back on its queue
  // (redelivered = true) if `requeue`, else dropped.
  virtual result<void> ack(std::uint64_t tag) = 0;
  virtual result<void> reject(std::uint64_t tag, bool requeue) = 0;

  // Its connection state, read by health checks and metrics from any thread
  // at any time; it must not block. This default suits a transport with no
  // connection to lose (in memory): always connected, never reconnected.
  [[nodiscard]] virtual transport_health health() const { return {}; }

  // How an operator reads, replays and deletes the messages of its error
  // queues (bus/failed_messages.hpp), living as long as the transport;
  // null where the transport offers none (the bus's page then says so).
  [[nodiscard]] virtual error_queue_access* error_queues() noexcept { return nullptr; }
};

using transport_ptr = std::shared_ptr<transport>;

} // namespace bus
