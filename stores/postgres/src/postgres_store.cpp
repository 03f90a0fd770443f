#include "bus/postgres_store.hpp"

#include <cstdlib>
#include <limits>

#include "postgres_pool.hpp"

namespace bus {

using detail::pg_result;
using detail::pg_statement;
using detail::postgres_connection;
using detail::postgres_lease;
using detail::succeeded;

namespace {

std::string ms(time_point t) { return std::to_string(to_unix_ms(t)); }

// Appends the stored sends of `key`, in send order; false on an error.
bool read_stored(postgres_connection& c, const inbox_key& key,
                 std::vector<std::string>& out) {
  auto rows = c.run(pg_statement::stored_rows, {key.endpoint, key.message_id});
  if (!succeeded(rows))
    return false;
  for (int i = 0, n = PQntuples(rows.get()); i < n; ++i)
    out.emplace_back(PQgetvalue(rows.get(), i, 0),
                     static_cast<std::size_t>(PQgetlength(rows.get(), i, 0)));
  return true;
}

// `key` with its message id as the tables keep it (stored_message_id).
result<inbox_key> stored(const inbox_key& key) {
  auto id = detail::stored_message_id(key.message_id);
  if (!id)
    return id.error();
  return inbox_key{key.endpoint, std::move(*id)};
}

// How many rows a statement changed.
long long changed(const pg_result& r) { return std::atoll(PQcmdTuples(r.get())); }

} // namespace

postgres_transaction::postgres_transaction(std::unique_ptr<postgres_lease> lease, inbox_key key)
  : lease_(std::move(lease)),
    socket_(std::make_shared<detail::attempt_socket>(PQsocket(lease_->connection->conn))),
    key_(std::move(key)) {
  lease_->socket = socket_;
}

std::function<void()> postgres_transaction::interrupter() const {
  return [socket = socket_] { socket->interrupt(); };
}

postgres_transaction::~postgres_transaction() { rollback(); }

PGconn* postgres_transaction::connection() const noexcept {
  return lease_ ? lease_->connection->conn : nullptr;
}

result<void> postgres_transaction::commit(const std::vector<std::string>& outgoing) {
  if (!lease_)
    return error{errc::store_failure, "the transaction has ended already"};
  auto lease = std::move(lease_);
  auto& c = *lease->connection;
  const auto& pool = *lease->pool;
  switch (PQtransactionStatus(c.conn)) {
    case PQTRANS_INTRANS:
      break;
    case PQTRANS_IDLE:
      // Its COMMIT kept the inbox record without the sends: forget it, so
      // that the retry runs the handler again rather than send nothing.
      (void)c.run(pg_statement::forget_inbox, {key_.endpoint, key_.message_id});
      return error{errc::store_failure,
                   pool.label
                     + ": the handler ended the transaction itself (COMMIT or ROLLBACK on its "
                       "connection), so its sends cannot commit with its writes"};
    case PQTRANS_INERROR:
      c.roll_back();
      return error{errc::store_failure,
                   pool.label
                     + ": a statement of the handler failed and aborted the transaction, so "
                       "nothing of the attempt is kept"};
    default:
      return pool.failure(c, "the connection is lost before the commit");
  }
  auto fail = [&](std::string_view what, const pg_result& r) {
    auto err = pool.failure(c, what, r);
    c.roll_back();
    return err;
  };
  if (outgoing.empty()) {
    // Nothing to send: the message is done once this commits.
    if (auto r = c.run(pg_statement::nothing_to_send, {key_.endpoint, key_.message_id});
        !succeeded(r))
      return fail("cannot record the message as handled", r);
  } else if (auto r = c.run(pg_statement::insert_outbox,
                            {key_.endpoint, key_.message_id, detail::text_array(outgoing)});
             !succeeded(r)) {
    return fail("cannot store the sent messages", r);
  }
  // A COMMIT the server turned into a ROLLBACK reports success: read its tag.
  if (auto r = c.exec("COMMIT"); !succeeded(r) || std::string_view(PQcmdStatus(r.get())) != "COMMIT")
    return fail("cannot commit", r);
  return {};
}

void postgres_transaction::rollback() noexcept {
  if (auto lease = std::move(lease_))
    lease->connection->roll_back();
}

result<std::shared_ptr<postgres_store>> postgres_store::open(postgres_store_settings settings) {
  if (settings.conninfo.empty())
    return error{errc::invalid_configuration,
                 "the PostgreSQL store needs a connection string (\"host=... dbname=...\" or "
                 "\"postgresql://...\")"};
  if (settings.lock_timeout.count() < 0 || settings.connect_timeout.count() < 0)
    return error{errc::invalid_configuration,
                 "the PostgreSQL store's lock and connect timeouts must not be negative"};
  if (settings.response_timeout <= settings.lock_timeout)
    return error{errc::invalid_configuration,
                 "the PostgreSQL store's response timeout (" + to_hms(settings.response_timeout)
                   + ") must be longer than its lock timeout (" + to_hms(settings.lock_timeout)
                   + "), which a statement may wait for a row lock"};
  auto label = detail::describe_conninfo(settings.conninfo);
  if (!label)
    return label.error();
  auto pool = std::make_shared<detail::postgres_pool>(std::move(settings), std::move(*label));
  // The first connection creates the tables: an unreachable server or a
  // refused login fails here, at build time, not at the first message.
  auto first = pool->take();
  if (!first)
    return first.error();
  pool->give_back(std::move(*first));
  auto store = std::make_shared<postgres_store>(std::move(pool));
  // Its records are its own from the first: the bus's sweeper renews the
  // lease from its start on, and no other process's claims them meanwhile.
  if (auto leased = store->renew_lease(std::chrono::system_clock::now() + std::chrono::minutes(1));
      !leased)
    return leased.error();
  return store;
}

postgres_store::postgres_store(std::shared_ptr<detail::postgres_pool> pool)
  : pool_(std::move(pool)) {}

postgres_store::~postgres_store() = default;

result<inbox_entry> postgres_store::receive(const inbox_key& given, time_point now) {
  auto stored_key = stored(given);
  if (!stored_key)
    return stored_key.error();
  const auto& key = *stored_key;
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  auto lease = std::make_unique<postgres_lease>(pool_, std::move(*taken));
  auto& c = *lease->connection;
  auto fail = [&](std::string_view what, const pg_result& r) {
    auto err = pool_->failure(c, what, r);
    c.roll_back();
    return err;
  };
  if (auto r = c.exec("BEGIN"); !succeeded(r))
    return fail("cannot begin a transaction", r);
  // A second copy of the message waits here, on the first's uncommitted
  // row, until that attempt ends: then it inserts (the first rolled back)
  // or finds the record (the first committed).
  auto inserted =
    c.run(pg_statement::insert_inbox, {key.endpoint, key.message_id, pool_->owner, ms(now)});
  if (!succeeded(inserted))
    return fail("cannot write the inbox record", inserted);
  inbox_entry entry;
  if (changed(inserted) == 1) {
    entry.transaction = std::make_unique<postgres_transaction>(std::move(lease), key);
    return entry;
  }
  // Handled before: what became of its sends? Read, then let go at once.
  auto record = c.run(pg_statement::dispatched_at, {key.endpoint, key.message_id});
  if (!succeeded(record) || PQntuples(record.get()) != 1)
    return fail("cannot read the inbox record", record);
  bool dispatched = !PQgetisnull(record.get(), 0, 0);
  entry.state = dispatched ? inbox_state::dispatched : inbox_state::stored;
  if (!dispatched && !read_stored(c, key, entry.stored))
    return fail("cannot read the stored sends", {});
  c.roll_back(); // only read: nothing to keep
  return entry;
}

result<void> postgres_store::mark_dispatched(const inbox_key& given, time_point now) {
  auto stored_key = stored(given);
  if (!stored_key)
    return stored_key.error();
  const auto& key = *stored_key;
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (auto r = c.run(pg_statement::mark_dispatched, {key.endpoint, key.message_id, ms(now)});
      !succeeded(r))
    return pool_->failure(c, "cannot mark the stored sends dispatched", r);
  return {};
}

result<std::size_t> postgres_store::clean(const std::string& endpoint,
                                          time_point dispatched_before, std::size_t batch) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  // One statement, its own short transaction: rows are locked for a batch,
  // never for the whole cleanup.
  auto r = c.run(pg_statement::clean_inbox,
                 {endpoint, ms(dispatched_before), std::to_string(batch)});
  if (!succeeded(r))
    return pool_->failure(c, "cannot delete old inbox records", r);
  return static_cast<std::size_t>(changed(r));
}

result<void> postgres_store::renew_lease(time_point until) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (auto r = c.run(pg_statement::renew_lease, {pool_->owner, ms(until)}); !succeeded(r))
    return pool_->failure(c, "cannot renew the store's lease", r);
  return {};
}

result<std::vector<orphan>> postgres_store::claim_orphans(const std::string& endpoint,
                                                          time_point now, std::size_t limit) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  auto fail = [&](std::string_view what, const pg_result& r) {
    auto err = pool_->failure(c, what, r);
    c.roll_back();
    return err;
  };
  // The claim and the reading of what it claimed commit together: a claim
  // whose rows this store never read would strand them for a lease.
  if (auto r = c.exec("BEGIN"); !succeeded(r))
    return fail("cannot begin a transaction", r);
  auto claimed =
    c.run(pg_statement::claim_orphans, {pool_->owner, ms(now), std::to_string(limit), endpoint});
  if (!succeeded(claimed))
    return fail("cannot claim orphaned sends", claimed);
  std::vector<orphan> found;
  for (int i = 0, n = PQntuples(claimed.get()); i < n; ++i)
    found.push_back({{PQgetvalue(claimed.get(), i, 0), PQgetvalue(claimed.get(), i, 1)}, {}});
  for (auto& o : found)
    if (!read_stored(c, o.key, o.stored))
      return fail("cannot read orphaned sends", {});
  if (auto r = c.exec("COMMIT"); !succeeded(r))
    return fail("cannot commit a claim", r);
  return found;
}

result<void> postgres_store::release(const inbox_key& given) {
  auto stored_key = stored(given);
  if (!stored_key)
    return stored_key.error();
  const auto& key = *stored_key;
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (auto r = c.run(pg_statement::release, {key.endpoint, key.message_id}); !succeeded(r))
    return pool_->failure(c, "cannot release stored sends", r);
  return {};
}

result<std::vector<outbox_backlog>> postgres_store::backlog() {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  auto rows = c.run(pg_statement::backlog, {});
  if (!succeeded(rows))
    return pool_->failure(c, "cannot read the outbox's backlog", rows);
  std::vector<outbox_backlog> out;
  for (int i = 0, n = PQntuples(rows.get()); i < n; ++i)
    out.push_back({PQgetvalue(rows.get(), i, 0),
                   static_cast<std::size_t>(std::atoll(PQgetvalue(rows.get(), i, 1))),
                   static_cast<std::size_t>(std::atoll(PQgetvalue(rows.get(), i, 2))),
                   from_unix_ms(std::atoll(PQgetvalue(rows.get(), i, 3)))});
  return out;
}

result<std::optional<std::uint64_t>> postgres_store::stream_offset(const std::string& reader,
                                                                   const std::string& stream) {
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  auto row = c.run(pg_statement::stream_offset, {reader, stream});
  if (!succeeded(row))
    return pool_->failure(c, "cannot read the offset of '" + reader + "' in '" + stream + "'", row);
  if (PQntuples(row.get()) == 0)
    return std::optional<std::uint64_t>();
  auto value = std::atoll(PQgetvalue(row.get(), 0, 0));
  if (value < 0)
    return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(static_cast<std::uint64_t>(value));
}

result<void> postgres_store::save_stream_offset(const std::string& reader,
                                                const std::string& stream,
                                                std::uint64_t committed) {
  if (committed > static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))
    return error{errc::store_failure, pool_->label + ": offset "
                                        + std::to_string(committed) + " is beyond a bigint"};
  auto taken = pool_->take();
  if (!taken)
    return taken.error();
  postgres_lease lease(pool_, std::move(*taken));
  auto& c = *lease.connection;
  if (auto r = c.run(pg_statement::save_stream_offset, {reader, stream, std::to_string(committed)});
      !succeeded(r))
    return pool_->failure(c, "cannot save the offset of '" + reader + "' in '" + stream + "'", r);
  return {};
}

} // namespace bus
