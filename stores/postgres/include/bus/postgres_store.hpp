// The outbox and inbox in PostgreSQL (Debian's libpq-dev against
// postgresql-15): the store for several processes sharing one database.
// It implements bus/message_store.hpp.
//
//   auto store = bus::postgres_store::open({"host=db dbname=orders user=billing"});
//   b.endpoint("billing", [&](bus::endpoint_builder& e) {
//     e.outbox(*store).handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
//       PGconn* db = ctx.transaction<bus::postgres_transaction>().connection();
//       // the handler's own statements, then ctx.send(...): committed together
//     });
//   });
//
// Unlike SQLite, writers do not wait for each other: two handlers block
// one another only on the same row, which is how a second copy of a
// message waits for the first (its inbox record). Each attempt holds one
// connection of the store's pool from its inbox record to its commit.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bus/message_store.hpp"

// libpq's connection (libpq-fe.h): a handler that uses it includes that.
struct pg_conn;
typedef struct pg_conn PGconn; // NOLINT: libpq's own spelling, repeated

namespace bus {

struct postgres_store_settings {
  // A libpq connection string or URI ("host=... dbname=... user=..." or
  // "postgresql://..."); libpq's environment (PGHOST, PGPASSWORD, ...)
  // fills in what it leaves out. The bus's tables are created in the
  // first schema of the search path if missing.
  std::string conninfo;
  // How long a statement of the bus waits for a row lock (a second copy of
  // a message behind the first's transaction, a lock an operator holds)
  // before it fails as a store_error for the policy. The handler's own
  // statements are bound by it too.
  duration lock_timeout = std::chrono::seconds(10);
  // How long opening a connection may take (a server that does not answer).
  duration connect_timeout = std::chrono::seconds(10);
  // How long the bus waits for the server's answer to one of its own
  // statements (the inbox record, the stored sends, the commit, a sweep's):
  // a server or network that goes silent (a failover, a partition, a proxy
  // that hangs) fails the attempt as a store_error within this time, and
  // the connection is closed, never lent again. Longer than lock_timeout,
  // which it must not cut short. The handler's own statements on
  // connection() are libpq's blocking calls: the bus bounds them through
  // TCP (keepalives, and tcp_user_timeout at this value, which end a
  // connection whose packets go unanswered), not a server that holds the
  // connection open and answers nothing, except at a stop's drain timeout,
  // which shuts the attempt's connection down (docs/outbox.md).
  duration response_timeout = std::chrono::seconds(30);
};

namespace detail {
struct postgres_pool;
struct postgres_lease;
struct attempt_socket;
} // namespace detail

// The transaction of one attempt. The handler writes through connection();
// it must not commit or roll back itself (the bus refuses a commit of a
// transaction the handler ended, or one a failed statement aborted).
class postgres_transaction final : public store_transaction {
public:
  // Made by postgres_store::receive(), with the transaction begun.
  postgres_transaction(std::unique_ptr<detail::postgres_lease> lease, inbox_key key);
  ~postgres_transaction() override;

  // The connection, inside the attempt's transaction.
  [[nodiscard]] PGconn* connection() const noexcept;

  result<void> commit(const std::vector<std::string>& outgoing) override;
  void rollback() noexcept override;
  // Shuts the connection's socket down (never closes it): a statement the
  // handler waits in fails at once, and the connection is not lent again.
  [[nodiscard]] std::function<void()> interrupter() const override;

private:
  std::unique_ptr<detail::postgres_lease> lease_; // null once ended
  std::shared_ptr<detail::attempt_socket> socket_;
  inbox_key key_;
};

class postgres_store final : public message_store {
public:
  // Connects, creates the bus's tables if missing, and takes a lease of a
  // minute on the records it will write (the bus's sweeper renews it).
  // errc::store_failure naming the server and its reason (unreachable,
  // refused, tables of a later bus); errc::invalid_configuration for an
  // empty or malformed connection string.
  [[nodiscard]] static result<std::shared_ptr<postgres_store>>
  open(postgres_store_settings settings);

  explicit postgres_store(std::shared_ptr<detail::postgres_pool> pool);
  ~postgres_store() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "postgresql"; }
  result<inbox_entry> receive(const inbox_key& key, time_point now) override;
  result<void> mark_dispatched(const inbox_key& key, time_point now) override;
  // One cleaner per database: a clean() while another process's runs (an
  // advisory lock held) deletes nothing and returns 0.
  result<std::size_t> clean(const std::string& endpoint, time_point dispatched_before,
                            std::size_t batch) override;
  result<void> renew_lease(time_point until) override;
  result<std::vector<orphan>> claim_orphans(const std::string& endpoint, time_point now,
                                            std::size_t limit) override;
  result<void> release(const inbox_key& key) override;
  result<std::vector<outbox_backlog>> backlog() override;
  result<std::optional<std::uint64_t>> stream_offset(const std::string& reader,
                                                     const std::string& stream) override;
  result<void> save_stream_offset(const std::string& reader, const std::string& stream,
                                  std::uint64_t committed) override;

private:
  std::shared_ptr<detail::postgres_pool> pool_;
};

} // namespace bus
