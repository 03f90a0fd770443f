// The in-memory transport: named queues in this process, the embedded
// default and the transport of every deterministic test. Typed bodies pass
// through untouched (no serialization on this path).
//
// Thread-safe: any thread may call any member. Delivery handlers run on the
// calling thread, outside the lock, after the operation that made the
// delivery possible (a send, a publish, an ack, a reject, consume itself).
// It never waits on anything but its own lock, so the port's default
// asynchronous forms are right for it: async_send and async_publish run the
// blocking form and call their completion inline, on the caller's thread,
// before they return (after the deliveries that the send made).
//
// Streams (bus/stream.hpp) are logs in this process: each reader keeps its
// own next offset. Retention applies max_age, by the transport's clock
// (set_clock), as messages are appended; max_length_bytes is RabbitMQ's
// only: a typed body, never serialized here, has no size to count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bus/transport.hpp"

namespace bus {

namespace detail {
class in_memory_error_queues;
} // namespace detail

class in_memory_transport final : public transport {
public:
  in_memory_transport();
  ~in_memory_transport() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "in_memory"; }
  [[nodiscard]] transport_capabilities capabilities() const noexcept override {
    transport_capabilities c;
    c.streams = true;
    return c;
  }

  result<void> declare_queue(const std::string& queue) override;
  [[nodiscard]] result<void> check_queue(const std::string& queue) const override;
  result<void> subscribe(const std::string& queue, const std::string& message_type) override;
  result<void> consume(const std::string& queue, std::size_t max_unacked,
                       delivery_handler on_delivery) override;
  void cancel(const std::string& queue) override;
  result<void> declare_stream(const std::string& stream, const stream_retention& retention) override;
  [[nodiscard]] bool is_stream(const std::string& name) const override;
  [[nodiscard]] std::optional<std::uint64_t> stream_tail(const std::string& stream) const override;
  result<void> consume_stream(const std::string& reader, const std::string& stream,
                              const stream_start& start, std::size_t max_unacked,
                              delivery_handler on_delivery) override;
  result<void> send(const std::string& queue, envelope msg) override;
  // Never waits, so the result is known before it returns; a shared
  // message is queued as it is, without a copy.
  void async_send_shared(const std::string& queue, envelope_ptr msg, completion done) override;
  // All in one step: one lock, one round of deliveries.
  void async_send_shared_all(const std::string& queue, const std::vector<envelope_ptr>& msgs,
                             indexed_completion done) override;
  result<void> publish(envelope msg) override;
  result<void> ack(std::uint64_t tag) override;
  result<void> reject(std::uint64_t tag, bool requeue) override;

  // Inspection, for tests, samples and operators.

  // Messages waiting on `queue` (not delivered yet), oldest first.
  [[nodiscard]] std::vector<envelope_ptr> browse(const std::string& queue) const;
  [[nodiscard]] std::size_t depth(const std::string& queue) const;
  // Deliveries made from `queue` and not settled yet.
  [[nodiscard]] std::size_t unacked(const std::string& queue) const;
  [[nodiscard]] bool has_queue(const std::string& queue) const;

  // The offsets `stream` holds, [first, next): next is the offset the next
  // append gets; equal when it holds nothing. Nothing for an unknown name.
  struct stream_offsets {
    std::uint64_t first = 0;
    std::uint64_t next = 0;
  };
  [[nodiscard]] std::optional<stream_offsets> stream_bounds(const std::string& stream) const;

  // The clock that stamps appends to streams (for a start at a time, and
  // max_age): the system clock unless set, a test's virtual one if set.
  void set_clock(std::function<time_point()> now);

  // Removes the waiting messages of `queue` that `selected` accepts and
  // returns them, oldest first: what an operator's replay or purge takes.
  std::vector<envelope_ptr> take(const std::string& queue,
                                 const std::function<bool(const envelope&)>& selected);

  // Reading, replaying and purging error queues (bus/failed_messages.hpp).
  [[nodiscard]] error_queue_access* error_queues() noexcept override;

private:
  result<void> send_shared(const std::string& queue, envelope_ptr msg);

  struct waiting {
    envelope_ptr message;
    bool redelivered = false;
  };

  struct queue_state {
    std::deque<waiting> ready;
    std::size_t unacked = 0;
    std::size_t max_unacked = 0;
    // Shared so that a batch taken under the lock can still call it after
    // cancel() has dropped the queue's reference. Null: nobody consumes.
    std::shared_ptr<const delivery_handler> handler;
    // Deliveries taken under the lock whose handler call has not returned;
    // cancel() waits for it to reach zero.
    std::size_t delivering = 0;
  };

  struct stream_state {
    struct entry {
      envelope_ptr message;
      time_point appended;
    };
    std::deque<entry> log;
    std::uint64_t first = 0; // the offset of log.front()
    stream_retention retention;
  };

  // One reader of a stream: where it reads next, and its deliveries.
  struct reader_state {
    const std::string* stream_name = nullptr; // stable: streams are never erased
    stream_state* stream = nullptr;
    std::uint64_t next = 0;
    std::size_t unacked = 0;
    std::size_t max_unacked = 0;
    std::shared_ptr<const delivery_handler> handler; // null once cancelled
    std::size_t delivering = 0; // as queue_state's
  };

  struct pending_call {
    std::shared_ptr<const delivery_handler> handler;
    std::size_t* delivering; // its queue's or reader's: stable, never erased
    delivery item;
  };

  // A delivery not settled yet. Points at its queue's name and state, or
  // at its reader (stable: neither is ever erased), so that settling
  // neither copies nor hashes a name.
  struct outstanding {
    const std::string* queue_name;
    queue_state* queue;   // null for a stream reader's
    reader_state* reader; // null for a queue's
    envelope_ptr message;
  };

  // Takes as many ready messages of `q` as its consumer may have
  // outstanding. Runs under the lock; the caller delivers after unlocking.
  // `name` (and enqueue's) is q's key in queues_, which outlives it.
  void take_deliverable(const std::string& name, queue_state& q, std::vector<pending_call>& out);
  // Calls each delivery's handler. Runs without the lock.
  void deliver(std::vector<pending_call>& batch);
  void enqueue(const std::string& name, queue_state& q, envelope_ptr msg,
               std::vector<pending_call>& out);
  // Appends to a stream, applies its retention, and takes what its readers
  // may read now. Under the lock, as enqueue.
  void append(stream_state& s, envelope_ptr msg, std::vector<pending_call>& out);
  // As take_deliverable, for a stream's reader.
  void take_readable(reader_state& r, std::vector<pending_call>& out);
  // Puts `msg` on the queue or stream `name`; false if neither exists.
  bool put(const std::string& name, envelope_ptr msg, std::vector<pending_call>& out);

  mutable std::mutex mutex_;
  std::condition_variable delivered_;
  std::unordered_map<std::string, queue_state> queues_;
  std::unordered_map<std::string, stream_state> streams_;
  std::unordered_map<std::string, reader_state> readers_;
  std::function<time_point()> now_ = [] { return std::chrono::system_clock::now(); };
  std::unordered_map<std::string, std::vector<std::string>> subscribers_; // type -> queues, streams
  std::unordered_map<std::uint64_t, outstanding> outstanding_;
  std::uint64_t next_tag_ = 1;
  std::unique_ptr<detail::in_memory_error_queues> error_queues_;
};

} // namespace bus
