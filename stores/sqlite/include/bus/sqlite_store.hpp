// The outbox and inbox in SQLite (Debian's libsqlite3-dev): the embedded
// store, a file per bus, no server. It implements bus/message_store.hpp.
//
//   auto store = bus::sqlite_store::open({"orders.db"});   // result<...>
//   b.endpoint("billing", [&](bus::endpoint_builder& e) {
//     e.outbox(*store).handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
//       sqlite3* db = ctx.transaction<bus::sqlite_transaction>().connection();
//       // the handler's own INSERTs, then ctx.send(...): committed together
//     });
//   });
//
// SQLite has one writer at a time per file: a handler's transaction holds
// the write lock from its inbox record to its commit, so the handlers of
// every endpoint sharing a file write one after another (the others wait
// up to busy_timeout). Several processes need PostgreSQL.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bus/message_store.hpp"

struct sqlite3;

namespace bus {

struct sqlite_store_settings {
  std::string path; // the database file, created with the bus's tables if missing
  // How long a transaction waits for the file's write lock before it fails
  // (a store_error for the policy).
  duration busy_timeout = std::chrono::seconds(10);
  // Off (synchronous=NORMAL in WAL mode): a commit survives a crash of the
  // process. On (FULL): it survives a power loss too, at a cost per commit.
  bool survive_power_loss = false;
};

namespace detail {
struct sqlite_pool;
struct sqlite_lease;
} // namespace detail

// The transaction of one attempt. The handler writes through connection();
// it must not commit or roll back itself (the bus refuses a commit of a
// transaction the handler ended).
class sqlite_transaction final : public store_transaction {
public:
  // Made by sqlite_store::receive(), with the transaction begun.
  sqlite_transaction(std::unique_ptr<detail::sqlite_lease> lease, inbox_key key);
  ~sqlite_transaction() override;

  // The connection, inside the attempt's transaction.
  [[nodiscard]] sqlite3* connection() const noexcept;

  result<void> commit(const std::vector<std::string>& outgoing) override;
  void rollback() noexcept override;

private:
  std::unique_ptr<detail::sqlite_lease> lease_; // null once ended
  inbox_key key_;
};

class sqlite_store final : public message_store {
public:
  // Opens (or creates) the file in WAL mode with the bus's tables, and
  // takes a lease of a minute on the records it will write (the bus's
  // sweeper renews it; see message_store::renew_lease).
  // errc::store_failure naming the file and SQLite's reason; also for a
  // file whose bus tables a later version of the bus wrote.
  [[nodiscard]] static result<std::shared_ptr<sqlite_store>> open(sqlite_store_settings settings);

  explicit sqlite_store(std::shared_ptr<detail::sqlite_pool> pool);
  ~sqlite_store() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "sqlite"; }
  result<inbox_entry> receive(const inbox_key& key, time_point now) override;
  result<void> mark_dispatched(const inbox_key& key, time_point now) override;
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
  std::shared_ptr<detail::sqlite_pool> pool_;
};

} // namespace bus
