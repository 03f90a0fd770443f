// The persistence port of the outbox and inbox: what the bus needs from a
// database to make a handler's effects happen once. stores/ implements it
// (SQLite, PostgreSQL); the runtime knows only this interface, never a
// database type.
//
// One delivery on an endpoint with a store, end to end:
//   1. receive(): a transaction opens and the inbox record (endpoint,
//      message id) is written before anything else. A record there already
//      means a duplicate: dispatched, or stored and not yet dispatched.
//   2. The handler writes its own rows inside that transaction (the
//      adapter's transaction type gives it the connection); its sends are
//      buffered in memory.
//   3. commit(): the sends are stored as outbox rows and everything
//      commits at once. A handler that throws rolls all of it back, inbox
//      record included, and the policy decides as without a store.
//   4. The bus dispatches the sends through the transport, then
//      mark_dispatched(), then acknowledges the delivery.
// A crash between any two steps leaves the delivery unacknowledged: the
// transport delivers it again, and step 1 finds where it stopped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bus/error.hpp"
#include "bus/time.hpp"

namespace bus {

// A failure of the store itself (the database is down, locked too long, a
// constraint broke), raised to the recoverability policy as a handler's
// exception would be: a rule can retry it or trip a dependency breaker.
class store_error : public std::runtime_error {
public:
  explicit store_error(const std::string& what) : std::runtime_error(what) {}
};

// Which delivery an inbox record stands for.
struct inbox_key {
  std::string endpoint;
  std::string message_id;

  friend bool operator==(const inbox_key& a, const inbox_key& b) {
    return a.endpoint == b.endpoint && a.message_id == b.message_id;
  }
};

// The transaction of one attempt: opened by message_store::receive() with
// the inbox record written, ended by commit() or rollback(). An adapter's
// subclass gives the handler its connection (handler_context::transaction).
// Used by one thread at a time.
class store_transaction {
public:
  virtual ~store_transaction() = default; // an unfinished transaction rolls back

  // Stores `outgoing` (records of encode_outgoing(), in send order) as the
  // attempt's outbox rows and commits them with everything else written in
  // the transaction. On failure nothing of it is kept.
  virtual result<void> commit(const std::vector<std::string>& outgoing) = 0;
  // Undoes everything written in the transaction, the inbox record too.
  virtual void rollback() noexcept = 0;

  // A callable that, from any other thread, ends whatever the attempt's
  // connection waits for (a statement of the handler's own on a server
  // gone silent): that call fails at once, and the attempt can only fail.
  // The runtime calls it when a stop's drain timeout gives the attempt's
  // message back, so that stop() does not wait behind a database. Safe to
  // call at any time, also after the transaction ended (then it does
  // nothing); empty where a store has nothing to end.
  [[nodiscard]] virtual std::function<void()> interrupter() const { return {}; }
};

// What the inbox knows of a delivery.
enum class inbox_state : std::uint8_t {
  first,      // not handled here before: handle it inside the transaction
  stored,     // handled, its sends stored but not all dispatched: dispatch them
  dispatched, // handled and dispatched: a duplicate, to acknowledge and drop
};

struct inbox_entry {
  inbox_state state = inbox_state::first;
  std::unique_ptr<store_transaction> transaction; // set when first
  std::vector<std::string> stored;                // when stored: the outbox rows, in send order
};

// A message whose stored sends a dead process left behind (or their
// owner gave up), now claimed by a sweeper to send them.
struct orphan {
  inbox_key key;
  std::vector<std::string> stored; // in send order
};

// What an endpoint's outbox still has to send: messages handled whose
// sends are not all out (in flight for a moment, or a dead process's until
// a sweep), for metrics and operators.
struct outbox_backlog {
  std::string endpoint;
  std::size_t messages = 0;  // records whose sends are not all out
  std::size_t sends = 0;     // their stored sends
  time_point oldest{};       // when the oldest of those messages was received
};

// Who sends a record's stored sends. Each store object is one owner (a
// process, in practice): the records it writes are its own, and no sweeper
// takes them while its lease holds. A process that dies stops renewing its
// lease; once it ends, any sweeper may claim what it left.
class message_store {
public:
  virtual ~message_store() = default;

  // "sqlite", "postgresql": for log lines and metrics.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

  // Opens the transaction of an attempt at `key` and writes its inbox
  // record first, so that a second copy of the message on another
  // consumer or process waits for this one to end, then sees it handled
  // (see docs/outbox.md, "Why the inbox record comes first"). When the
  // record exists already no transaction is left open. May block.
  virtual result<inbox_entry> receive(const inbox_key& key, time_point now) = 0;

  // Records that every stored send of `key` went out; its outbox rows are
  // deleted, its inbox record stays (for deduplication) until cleanup.
  // Idempotent. May block.
  virtual result<void> mark_dispatched(const inbox_key& key, time_point now) = 0;

  // Deletes at most `batch` inbox records of `endpoint` whose sends went
  // out before `dispatched_before`, in one short transaction, and returns
  // how many it deleted: the runtime's cleaner calls it again while it
  // deletes a whole batch, so that deliveries interleave with a large
  // cleanup instead of waiting behind it. Records still waiting for their
  // sends are never deleted. May block.
  virtual result<std::size_t> clean(const std::string& endpoint, time_point dispatched_before,
                                    std::size_t batch) = 0;

  // Keeps this store's records its own until `until`. The runtime renews
  // it at start, before any delivery, and at every sweep. May block.
  virtual result<void> renew_lease(time_point until) = 0;

  // Claims at most `limit` records of `endpoint` whose sends are not all
  // out and whose owner's lease ended before `now`, or whose owner
  // released them: they are this store's from now on, and another sweeper
  // does not take them while its lease holds. Records of a live owner are
  // never claimed: its handler may be sending them right now. Only the
  // endpoint's own: services that share a database need not share a
  // broker, and an endpoint's sweeper sends through its own transport and
  // keeps what does not read on its own error queue. May block.
  virtual result<std::vector<orphan>> claim_orphans(const std::string& endpoint, time_point now,
                                                    std::size_t limit) = 0;

  // Gives up the stored sends of `key` (they could not be sent): the next
  // sweep of any process, this one's included, claims them. May block.
  virtual result<void> release(const inbox_key& key) = 0;

  // The backlog of every endpoint with one, by endpoint name; endpoints
  // with nothing pending are left out. Reads only. May block.
  virtual result<std::vector<outbox_backlog>> backlog() = 0;

  // Where the endpoint `reader` stands in `stream` (issue 27): the last
  // offset with everything up to it settled, none if it never saved one.
  // RabbitMQ keeps no offsets for AMQP 0.9.1 readers; an endpoint with a
  // store keeps its offset here, beside its inbox, instead of in a file.
  // May block.
  virtual result<std::optional<std::uint64_t>> stream_offset(const std::string& reader,
                                                             const std::string& stream) = 0;

  // Saves `committed` as where `reader` stands in `stream`, replacing what
  // was there, in a short transaction of its own. May block.
  virtual result<void> save_stream_offset(const std::string& reader, const std::string& stream,
                                          std::uint64_t committed) = 0;
};

namespace detail {
// A new store's name as the owner of its records: 128 random bits in hex,
// so that no two stores, in any process, share one.
[[nodiscard]] std::string new_store_owner();
} // namespace detail

} // namespace bus
