#include "sqlite_pool.hpp"

namespace bus::detail {

namespace {

// The bus's tables. The inbox record stays after dispatch, for
// deduplication; the outbox rows of a message go once they are out.
// bus_store_schema says which bus wrote the file, so that an older bus
// refuses tables a newer one changed rather than misread them.
constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS bus_store_schema (version INTEGER NOT NULL);
INSERT INTO bus_store_schema (version) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM bus_store_schema);
CREATE TABLE IF NOT EXISTS bus_inbox (
  endpoint      TEXT    NOT NULL,
  message_id    TEXT    NOT NULL,
  received_at   INTEGER NOT NULL, -- Unix ms
  dispatched_at INTEGER,          -- Unix ms; NULL while stored sends are not all out
  owner         TEXT    NOT NULL, -- the store (process) that sends them; '' once given up
  PRIMARY KEY (endpoint, message_id)
) WITHOUT ROWID;
-- The sweeper's way to records whose sends are not all out.
CREATE INDEX IF NOT EXISTS bus_inbox_undispatched ON bus_inbox (owner) WHERE dispatched_at IS NULL;
-- Each live store's lease on its records: a sweeper leaves them alone until it ends.
CREATE TABLE IF NOT EXISTS bus_store_owners (
  owner      TEXT    NOT NULL PRIMARY KEY,
  expires_at INTEGER NOT NULL     -- Unix ms
) WITHOUT ROWID;
-- The cleaner's way to the oldest dispatched records of an endpoint.
CREATE INDEX IF NOT EXISTS bus_inbox_dispatched ON bus_inbox (endpoint, dispatched_at);
CREATE TABLE IF NOT EXISTS bus_outbox (
  endpoint   TEXT    NOT NULL,
  message_id TEXT    NOT NULL,
  position   INTEGER NOT NULL,    -- send order within the message's attempt
  record     TEXT    NOT NULL,    -- bus::encode_outgoing()
  PRIMARY KEY (endpoint, message_id, position)
) WITHOUT ROWID;
-- Where each stream endpoint stands in its stream. Added to version 1: an
-- older bus never reads it, so the version stays.
CREATE TABLE IF NOT EXISTS bus_stream_offsets (
  reader     TEXT    NOT NULL,    -- the endpoint's name
  stream     TEXT    NOT NULL,
  committed  INTEGER NOT NULL,    -- the last offset with everything up to it settled
  PRIMARY KEY (reader, stream)
) WITHOUT ROWID;
)sql";

constexpr int schema_version = 1;

// Per endpoint: the records whose sends are not all out, their stored
// sends, and when the oldest was received.
constexpr const char* backlog_sql =
  "SELECT i.endpoint, count(DISTINCT i.message_id), count(o.position), min(i.received_at) "
  "FROM bus_inbox AS i LEFT JOIN bus_outbox AS o "
  "ON o.endpoint = i.endpoint AND o.message_id = i.message_id "
  "WHERE i.dispatched_at IS NULL GROUP BY i.endpoint ORDER BY i.endpoint";

} // namespace

sqlite_pool::sqlite_pool(sqlite_store_settings s)
  : settings(std::move(s)), owner(new_store_owner()) {}

sqlite_statement::sqlite_statement(sqlite3* db, std::string_view sql) { (void)prepare(db, sql); }

bool sqlite_statement::prepare(sqlite3* db, std::string_view sql) {
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &stmt_, nullptr)
      != SQLITE_OK)
    stmt_ = nullptr;
  return stmt_ != nullptr;
}

sqlite_statement::~sqlite_statement() { sqlite3_finalize(stmt_); }

sqlite_connection::~sqlite_connection() {
  // The statements are finalized after this body (they are members):
  // sqlite3_close_v2 defers the close until they are.
  sqlite3_close_v2(db);
}

error sqlite_pool::failure(sqlite3* db, std::string_view what) const {
  std::string out = "sqlite '" + settings.path + "': ";
  out += what;
  out += ": ";
  out += db ? sqlite3_errmsg(db) : "out of memory";
  return error{errc::store_failure, std::move(out)};
}

result<std::unique_ptr<sqlite_connection>> sqlite_pool::take() {
  {
    std::lock_guard lock(mutex);
    if (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<sqlite_connection>();
  // NOMUTEX: a connection is used by one thread at a time, handed over
  // through the pool's mutex.
  if (sqlite3_open_v2(settings.path.c_str(), &c->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr)
      != SQLITE_OK)
    return failure(c->db, "cannot open the database");
  sqlite3_extended_result_codes(c->db, 1);
  sqlite3_busy_timeout(c->db, static_cast<int>(settings.busy_timeout.count()));
  std::string pragmas = "PRAGMA journal_mode=WAL; PRAGMA synchronous=";
  pragmas += settings.survive_power_loss ? "FULL;" : "NORMAL;";
  if (sqlite3_exec(c->db, pragmas.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return failure(c->db, "cannot set WAL mode");
  if (sqlite3_exec(c->db, schema_sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return failure(c->db, "cannot create the bus's tables");
  int version = 0;
  {
    sqlite_statement s(c->db, "SELECT max(version) FROM bus_store_schema");
    if (!s.prepared() || sqlite3_step(s.get()) != SQLITE_ROW)
      return failure(c->db, "cannot read the schema version");
    version = sqlite3_column_int(s.get(), 0);
  }
  if (version != schema_version)
    return error{errc::store_failure,
                 "sqlite '" + settings.path + "': its bus tables have schema version "
                   + std::to_string(version) + ", this bus reads version "
                   + std::to_string(schema_version)};
  auto prepare = [&](sqlite_statement& s, std::string_view sql) { return s.prepare(c->db, sql); };
  bool ok = prepare(c->begin, "BEGIN IMMEDIATE") && prepare(c->commit, "COMMIT")
            && prepare(c->rollback, "ROLLBACK")
            && prepare(c->insert_inbox,
                       "INSERT INTO bus_inbox (endpoint, message_id, owner, received_at) "
                       "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")
            && prepare(c->dispatched_at,
                       "SELECT dispatched_at FROM bus_inbox WHERE endpoint = ?1 AND message_id = ?2")
            && prepare(c->stored_rows, "SELECT record FROM bus_outbox WHERE endpoint = ?1 AND "
                                       "message_id = ?2 ORDER BY position")
            && prepare(c->insert_outbox,
                       "INSERT INTO bus_outbox (endpoint, message_id, record, position) "
                       "VALUES (?1, ?2, ?3, ?4)")
            && prepare(c->nothing_to_send, "UPDATE bus_inbox SET dispatched_at = received_at "
                                           "WHERE endpoint = ?1 AND message_id = ?2")
            && prepare(c->mark_inbox, "UPDATE bus_inbox SET dispatched_at = ?3 WHERE endpoint = "
                                      "?1 AND message_id = ?2 AND dispatched_at IS NULL")
            && prepare(c->delete_outbox,
                       "DELETE FROM bus_outbox WHERE endpoint = ?1 AND message_id = ?2")
            && prepare(c->forget_inbox,
                       "DELETE FROM bus_inbox WHERE endpoint = ?1 AND message_id = ?2 AND "
                       "dispatched_at IS NULL AND NOT EXISTS (SELECT 1 FROM bus_outbox WHERE "
                       "endpoint = ?1 AND message_id = ?2)")
            && prepare(c->clean_inbox,
                       "DELETE FROM bus_inbox WHERE endpoint = ?1 AND message_id IN (SELECT "
                       "message_id FROM bus_inbox WHERE endpoint = ?1 AND dispatched_at < ?2 "
                       "LIMIT ?3)")
            && prepare(c->renew_lease,
                       "INSERT INTO bus_store_owners (owner, expires_at) VALUES (?1, ?2) "
                       "ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at")
            && prepare(c->orphans,
                       "SELECT endpoint, message_id FROM bus_inbox AS i WHERE endpoint = ?4 AND "
                       "dispatched_at IS NULL AND owner <> ?1 AND (owner = '' OR NOT EXISTS (SELECT 1 FROM "
                       "bus_store_owners AS o WHERE o.owner = i.owner AND o.expires_at >= ?2)) "
                       "LIMIT ?3")
            && prepare(c->claim, "UPDATE bus_inbox SET owner = ?3 WHERE endpoint = ?1 AND "
                                 "message_id = ?2")
            && prepare(c->release, "UPDATE bus_inbox SET owner = '' WHERE endpoint = ?1 AND "
                                   "message_id = ?2 AND dispatched_at IS NULL")
            && prepare(c->backlog, backlog_sql)
            && prepare(c->stream_offset, "SELECT committed FROM bus_stream_offsets WHERE "
                                         "reader = ?1 AND stream = ?2")
            && prepare(c->save_stream_offset,
                       "INSERT INTO bus_stream_offsets (reader, stream, committed) "
                       "VALUES (?1, ?2, ?3) ON CONFLICT (reader, stream) "
                       "DO UPDATE SET committed = excluded.committed");
  if (!ok)
    return failure(c->db, "cannot prepare the bus's statements");
  return c;
}

void sqlite_pool::give_back(std::unique_ptr<sqlite_connection> c) {
  // Never lend out a connection inside a transaction: a path that failed
  // halfway, or a handler that began one of its own, ends here.
  if (!sqlite3_get_autocommit(c->db))
    run(c->rollback, {});
  std::lock_guard lock(mutex);
  idle.push_back(std::move(c));
}

int run(sqlite_statement& s, std::initializer_list<std::string_view> texts,
        std::initializer_list<long long> ints) {
  auto* stmt = s.get();
  int i = 1;
  for (auto text : texts)
    sqlite3_bind_text(stmt, i++, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  for (auto value : ints)
    sqlite3_bind_int64(stmt, i++, value);
  int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  return rc;
}

} // namespace bus::detail
