#include "bus/sqlite_store.hpp"

#include <limits>

#include "sqlite_pool.hpp"

namespace bus {

using detail::run;
using detail::sqlite_lease;

namespace {

// Ends a transaction that went wrong; its own failure changes nothing
// (SQLite rolls back what it cannot commit, and a closed connection too).
void roll_back(detail::sqlite_connection& c) {
  if (!sqlite3_get_autocommit(c.db))
    run(c.rollback, {});
}

void bind_text(sqlite3_stmt* stmt, int index, const std::string& text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

// Appends the stored sends of `key`, in send order; false on an error.
bool read_stored(detail::sqlite_connection& c, const inbox_key& key,
                 std::vector<std::string>& out) {
  auto* stmt = c.stored_rows.get();
  bind_text(stmt, 1, key.endpoint);
  bind_text(stmt, 2, key.message_id);
  int rc = 0;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    out.emplace_back(text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0)));
  }
  sqlite3_reset(stmt);
  return rc == SQLITE_DONE;
}

} // namespace

sqlite_transaction::sqlite_transaction(std::unique_ptr<sqlite_lease> lease, inbox_key key)
  : lease_(std::move(lease)), key_(std::move(key)) {}

sqlite_transaction::~sqlite_transaction() { rollback(); }

sqlite3* sqlite_transaction::connection() const noexcept {
  return lease_ ? lease_->connection->db : nullptr;
}

result<void> sqlite_transaction::commit(const std::vector<std::string>& outgoing) {
  if (!lease_)
    return error{errc::store_failure, "the transaction has ended already"};
  auto lease = std::move(lease_);
  auto& c = *lease->connection;
  const auto& pool = *lease->pool;
  if (sqlite3_get_autocommit(c.db)) {
    // Its COMMIT kept the inbox record without the sends: forget it, so
    // that the retry runs the handler again rather than send nothing.
    run(c.forget_inbox, {key_.endpoint, key_.message_id});
    return error{errc::store_failure,
                 "sqlite '" + pool.settings.path
                   + "': the handler ended the transaction itself (COMMIT or ROLLBACK on its "
                     "connection), so its sends cannot commit with its writes"};
  }
  auto fail = [&](std::string_view what) {
    auto err = pool.failure(c.db, what);
    roll_back(c);
    return err;
  };
  long long position = 0;
  for (const auto& row : outgoing)
    if (run(c.insert_outbox, {key_.endpoint, key_.message_id, row}, {position++}) != SQLITE_DONE)
      return fail("cannot store a sent message");
  // Nothing to send: the message is done once this commits.
  if (outgoing.empty()
      && run(c.nothing_to_send, {key_.endpoint, key_.message_id}) != SQLITE_DONE)
    return fail("cannot record the message as handled");
  if (run(c.commit, {}) != SQLITE_DONE)
    return fail("cannot commit");
  return {};
}

void sqlite_transaction::rollback() noexcept {
  if (auto lease = std::move(lease_))
    roll_back(*lease->connection);
}

result<std::shared_ptr<sqlite_store>> sqlite_store::open(sqlite_store_settings settings) {
  if (settings.path.empty())
    return error{errc::invalid_configuration, "the SQLite store needs the path of its file"};
  if (settings.busy_timeout.count() < 0)
    return error{errc::invalid_configuration, "the SQLite store's busy timeout must not be negative"};
  auto pool = std::make_shared<detail::sqlite_pool>(std::move(settings));
  // The first connection creates the file and the tables: a bad path or a
  // file of another kind fails here, at build time, not at the first message.
  auto first = pool->take();
  if (!first)
    return first.error();
  pool->give_back(std::move(*first));
  auto store = std::make_shared<sqlite_store>(std::move(pool));
  // Its records are its own from the first: the bus's sweeper renews the
  // lease from its start on, and no other process's claims them meanwhile.
  if (auto leased = store->renew_lease(std::chrono::system_clock::now() + std::chrono::minutes(1));
      !leased)
    return leased.error();
  return store;
}

sqlite_store::sqlite_store(std::shared_ptr<detail::sqlite_pool> pool) : pool_(std::move(pool)) {}

sqlite_store::~sqlite_store() = default;

result<inbox_entry> sqlite_store::receive(const inbox_key& key, time_point now) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  auto lease = std::make_unique<sqlite_lease>(pool_, std::move(*taken));
  auto& c = *lease->connection;
  // IMMEDIATE takes the write lock now: a second copy of the message waits
  // here until this attempt ends, and a commit never fails on upgrading.
  if (run(c.begin, {}) != SQLITE_DONE)
    return pool_->failure(c.db, "cannot begin a transaction");
  if (run(c.insert_inbox, {key.endpoint, key.message_id, pool_->owner}, {to_unix_ms(now)})
      != SQLITE_DONE) {
    auto err = pool_->failure(c.db, "cannot write the inbox record");
    roll_back(c);
    return err;
  }
  inbox_entry entry;
  if (sqlite3_changes(c.db) == 1) {
    entry.transaction = std::make_unique<sqlite_transaction>(std::move(lease), key);
    return entry;
  }
  // Handled before: what became of its sends? Read, then let go at once.
  auto* stmt = c.dispatched_at.get();
  bind_text(stmt, 1, key.endpoint);
  bind_text(stmt, 2, key.message_id);
  int rc = sqlite3_step(stmt);
  bool dispatched = rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL;
  sqlite3_reset(stmt);
  if (rc != SQLITE_ROW) {
    auto err = pool_->failure(c.db, "cannot read the inbox record");
    roll_back(c);
    return err;
  }
  entry.state = dispatched ? inbox_state::dispatched : inbox_state::stored;
  if (!dispatched && !read_stored(c, key, entry.stored)) {
    auto err = pool_->failure(c.db, "cannot read the stored sends");
    roll_back(c);
    return err;
  }
  roll_back(c); // only read: nothing to keep
  return entry;
}

result<void> sqlite_store::mark_dispatched(const inbox_key& key, time_point now) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (run(c.begin, {}) != SQLITE_DONE)
    return pool_->failure(c.db, "cannot begin a transaction");
  if (run(c.mark_inbox, {key.endpoint, key.message_id}, {to_unix_ms(now)}) != SQLITE_DONE
      || run(c.delete_outbox, {key.endpoint, key.message_id}) != SQLITE_DONE
      || run(c.commit, {}) != SQLITE_DONE) {
    auto err = pool_->failure(c.db, "cannot mark the stored sends dispatched");
    roll_back(c);
    return err;
  }
  return {};
}

result<std::size_t> sqlite_store::clean(const std::string& endpoint, time_point dispatched_before,
                                        std::size_t batch) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  // One statement is one short transaction of its own: the write lock is
  // held for a batch, never for the whole cleanup.
  if (run(c.clean_inbox, {endpoint},
          {to_unix_ms(dispatched_before), static_cast<long long>(batch)})
      != SQLITE_DONE)
    return pool_->failure(c.db, "cannot delete old inbox records");
  return static_cast<std::size_t>(sqlite3_changes(c.db));
}

result<void> sqlite_store::renew_lease(time_point until) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (run(c.renew_lease, {pool_->owner}, {to_unix_ms(until)}) != SQLITE_DONE)
    return pool_->failure(c.db, "cannot renew the store's lease");
  return {};
}

result<std::vector<orphan>> sqlite_store::claim_orphans(const std::string& endpoint,
                                                        time_point now, std::size_t limit) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  auto fail = [&](std::string_view what) {
    auto err = pool_->failure(c.db, what);
    roll_back(c);
    return err;
  };
  // IMMEDIATE: two sweepers never claim the same record.
  if (run(c.begin, {}) != SQLITE_DONE)
    return pool_->failure(c.db, "cannot begin a transaction");
  std::vector<orphan> found;
  auto* stmt = c.orphans.get();
  bind_text(stmt, 1, pool_->owner);
  sqlite3_bind_int64(stmt, 2, to_unix_ms(now));
  sqlite3_bind_int64(stmt, 3, static_cast<long long>(limit));
  bind_text(stmt, 4, endpoint);
  int rc = 0;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto text = [&](int column) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      return std::string(t ? t : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, column)));
    };
    found.push_back({{text(0), text(1)}, {}});
  }
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE)
    return fail("cannot look for orphaned sends");
  for (auto& o : found) {
    if (run(c.claim, {o.key.endpoint, o.key.message_id, pool_->owner}) != SQLITE_DONE)
      return fail("cannot claim orphaned sends");
    if (!read_stored(c, o.key, o.stored))
      return fail("cannot read orphaned sends");
  }
  if (run(c.commit, {}) != SQLITE_DONE)
    return fail("cannot commit a claim");
  return found;
}

result<void> sqlite_store::release(const inbox_key& key) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (run(c.release, {key.endpoint, key.message_id}) != SQLITE_DONE)
    return pool_->failure(c.db, "cannot release stored sends");
  return {};
}

result<std::vector<outbox_backlog>> sqlite_store::backlog() {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  std::vector<outbox_backlog> out;
  auto* stmt = c.backlog.get();
  int rc = 0;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* endpoint = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    out.push_back({endpoint ? endpoint : "", static_cast<std::size_t>(sqlite3_column_int64(stmt, 1)),
                   static_cast<std::size_t>(sqlite3_column_int64(stmt, 2)),
                   from_unix_ms(sqlite3_column_int64(stmt, 3))});
  }
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE)
    return pool_->failure(c.db, "cannot read the outbox's backlog");
  return out;
}

result<std::optional<std::uint64_t>> sqlite_store::stream_offset(const std::string& reader,
                                                                 const std::string& stream) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  auto* stmt = c.stream_offset.get();
  bind_text(stmt, 1, reader);
  bind_text(stmt, 2, stream);
  int rc = sqlite3_step(stmt);
  std::optional<std::uint64_t> committed;
  if (rc == SQLITE_ROW) {
    auto value = sqlite3_column_int64(stmt, 0);
    if (value >= 0)
      committed = static_cast<std::uint64_t>(value);
    rc = SQLITE_DONE;
  }
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE)
    return pool_->failure(c.db, "cannot read the offset of '" + reader + "' in '" + stream + "'");
  return committed;
}

result<void> sqlite_store::save_stream_offset(const std::string& reader, const std::string& stream,
                                              std::uint64_t committed) {
  if (committed > static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))
    return error{errc::store_failure, "sqlite '" + pool_->settings.path + "': offset "
                                        + std::to_string(committed) + " is beyond SQLite's integers"};
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  sqlite_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (run(c.save_stream_offset, {reader, stream}, {static_cast<long long>(committed)})
      != SQLITE_DONE)
    return pool_->failure(c.db, "cannot save the offset of '" + reader + "' in '" + stream + "'");
  return {};
}

} // namespace bus
