// Sends from code that is not a handler, with that code's own writes
// (issue 21): a web request that saves an order and publishes
// order_placed. The writes and the sends commit together in a transaction
// of an endpoint's outbox store; the sends go out after the commit, and
// what a crash keeps from going out, that endpoint's sweeper sends.
//
//   auto session = bus.outbox_session(store);              // result<outbox_session>
//   sqlite3* db = session->transaction<bus::sqlite_transaction>().connection();
//   // INSERT the order on db ...
//   session->publish(order_placed{...});
//   if (auto done = session->commit(); !done) { /* nothing was kept */ }
//
// One session is one transaction: used by one thread, committed or rolled
// back once (destroying it unfinished rolls back), not kept beyond its bus.
// On SQLite it holds the file's write lock from its start to its end.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/error.hpp"
#include "bus/message_registry.hpp"
#include "bus/message_store.hpp"
#include "bus/outgoing_message.hpp"
#include "bus/send_options.hpp"

namespace bus {

class message_bus;

class outbox_session {
public:
  outbox_session(message_bus& bus, std::shared_ptr<message_store> store, inbox_key key,
                 std::unique_ptr<store_transaction> transaction);
  ~outbox_session();
  outbox_session(outbox_session&&) noexcept;
  outbox_session& operator=(outbox_session&&) = delete;

  // The transaction, as the store's adapter types it (see
  // handler_context::transaction). Throws std::logic_error once it ended or
  // if T is not its type.
  template <class T>
  [[nodiscard]] T& transaction() const {
    auto* typed = dynamic_cast<T*>(transaction_.get());
    if (typed == nullptr)
      throw std::logic_error(transaction_ ? "the session's transaction is of another store type"
                                          : "the session has ended");
    return *typed;
  }

  // Buffers `msg` for `queue` (send), for its route, or for every
  // subscriber (publish), as message_bus's sends do; it is stored at
  // commit. Returns the id it will carry.
  template <class T>
  result<std::string> send(const std::string& queue, T msg, send_options options = {}) {
    return stage(queue, registry_->make_body(std::move(msg)), std::move(options));
  }
  template <class T>
  result<std::string> send(T msg, send_options options = {}) {
    auto queue = registry_->route_of<T>();
    if (!queue)
      return queue.error();
    return send(*queue, std::move(msg), std::move(options));
  }
  template <class T>
  result<std::string> publish(T msg, send_options options = {}) {
    return stage({}, registry_->make_body(std::move(msg)), std::move(options));
  }

  // Stores the buffered sends and commits them with everything written in
  // the transaction; fails (errc::store_failure) only if nothing was kept.
  // Then sends them, blocking until the transport has them, and marks them
  // dispatched. A send that fails after the commit is logged and left to
  // the sweeper: the commit stands, and the message goes out later.
  result<void> commit();
  // Undoes everything; the buffered sends are dropped.
  void rollback() noexcept;

private:
  result<std::string> stage(const std::string& queue, result<message_body> body,
                            send_options options);

  message_bus* bus_;
  const message_registry* registry_;
  std::shared_ptr<message_store> store_;
  inbox_key key_;
  std::unique_ptr<store_transaction> transaction_;
  std::vector<outgoing_message> sends_;
};

} // namespace bus
