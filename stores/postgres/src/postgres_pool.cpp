#include "postgres_pool.hpp"

#include <openssl/evp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace bus::detail {

namespace {

// The bus's tables, as in SQLite (stores/sqlite/src/sqlite_pool.cpp): the
// inbox record stays after dispatch, for deduplication; the outbox rows of
// a message go once they are out. Times are Unix ms from the bus's clock.
// The advisory lock makes two processes that start at once create them one
// after the other (CREATE ... IF NOT EXISTS alone races on the catalog).
constexpr const char* schema_sql = R"sql(
BEGIN;
SELECT pg_advisory_xact_lock(7166953616166481920);
CREATE TABLE IF NOT EXISTS bus_store_schema (version INTEGER NOT NULL);
INSERT INTO bus_store_schema (version)
  SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM bus_store_schema);
CREATE TABLE IF NOT EXISTS bus_inbox (
  endpoint      TEXT   NOT NULL,
  message_id    TEXT   NOT NULL,
  received_at   BIGINT NOT NULL,
  dispatched_at BIGINT,          -- NULL while stored sends are not all out
  owner         TEXT   NOT NULL, -- the store (process) that sends them; '' once given up
  PRIMARY KEY (endpoint, message_id)
);
CREATE INDEX IF NOT EXISTS bus_inbox_undispatched ON bus_inbox (owner) WHERE dispatched_at IS NULL;
CREATE INDEX IF NOT EXISTS bus_inbox_dispatched ON bus_inbox (endpoint, dispatched_at);
CREATE TABLE IF NOT EXISTS bus_store_owners (
  owner      TEXT   NOT NULL PRIMARY KEY,
  expires_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS bus_outbox (
  endpoint   TEXT    NOT NULL,
  message_id TEXT    NOT NULL,
  position   INTEGER NOT NULL,  -- send order within the message's attempt
  record     TEXT    NOT NULL,  -- bus::encode_outgoing()
  PRIMARY KEY (endpoint, message_id, position)
);
-- Where each stream endpoint stands in its stream. Added to version 1: an
-- older bus never reads it, so the version stays.
CREATE TABLE IF NOT EXISTS bus_stream_offsets (
  reader    TEXT   NOT NULL,  -- the endpoint's name
  stream    TEXT   NOT NULL,
  committed BIGINT NOT NULL,  -- the last offset with everything up to it settled
  PRIMARY KEY (reader, stream)
);
COMMIT;
)sql";

constexpr int schema_version = 1;

struct statement_text {
  pg_statement id;
  const char* name;
  const char* sql;
};

// Every parameter travels as text and is cast where SQL needs a number.
constexpr std::array<statement_text, 14> statements{{
  {pg_statement::insert_inbox, "bus_insert_inbox",
   "INSERT INTO bus_inbox (endpoint, message_id, owner, received_at) "
   "VALUES ($1, $2, $3, $4::bigint) ON CONFLICT DO NOTHING"},
  {pg_statement::dispatched_at, "bus_dispatched_at",
   "SELECT dispatched_at FROM bus_inbox WHERE endpoint = $1 AND message_id = $2"},
  {pg_statement::stored_rows, "bus_stored_rows",
   "SELECT record FROM bus_outbox WHERE endpoint = $1 AND message_id = $2 ORDER BY position"},
  // All of a message's sends in one round trip.
  {pg_statement::insert_outbox, "bus_insert_outbox",
   "INSERT INTO bus_outbox (endpoint, message_id, position, record) "
   "SELECT $1, $2, t.n - 1, t.record FROM unnest($3::text[]) WITH ORDINALITY AS t(record, n)"},
  {pg_statement::nothing_to_send, "bus_nothing_to_send",
   "UPDATE bus_inbox SET dispatched_at = received_at WHERE endpoint = $1 AND message_id = $2"},
  // One statement, so one transaction: the mark and the deletion together.
  {pg_statement::mark_dispatched, "bus_mark_dispatched",
   "WITH marked AS (UPDATE bus_inbox SET dispatched_at = $3::bigint WHERE endpoint = $1 AND "
   "message_id = $2 AND dispatched_at IS NULL) "
   "DELETE FROM bus_outbox WHERE endpoint = $1 AND message_id = $2"},
  {pg_statement::forget_inbox, "bus_forget_inbox",
   "DELETE FROM bus_inbox WHERE endpoint = $1 AND message_id = $2 AND dispatched_at IS NULL AND "
   "NOT EXISTS (SELECT 1 FROM bus_outbox WHERE endpoint = $1 AND message_id = $2)"},
  // One cleaner per database: the statement deletes only while it holds
  // the cleaners' advisory lock, which its own transaction releases.
  {pg_statement::clean_inbox, "bus_clean_inbox",
   "WITH cleaner AS (SELECT pg_try_advisory_xact_lock(7166953616166481921) AS alone) "
   "DELETE FROM bus_inbox WHERE (SELECT alone FROM cleaner) AND ctid IN (SELECT ctid FROM "
   "bus_inbox WHERE endpoint = $1 AND dispatched_at < $2::bigint LIMIT $3::bigint)"},
  {pg_statement::renew_lease, "bus_renew_lease",
   "INSERT INTO bus_store_owners (owner, expires_at) VALUES ($1, $2::bigint) "
   "ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at"},
  // SKIP LOCKED: two sweepers claiming at once take different records.
  {pg_statement::claim_orphans, "bus_claim_orphans",
   "UPDATE bus_inbox AS i SET owner = $1 FROM (SELECT endpoint, message_id FROM bus_inbox AS c "
   "WHERE endpoint = $4 AND dispatched_at IS NULL AND owner <> $1 AND (owner = '' OR NOT "
   "EXISTS (SELECT 1 FROM bus_store_owners AS o WHERE o.owner = c.owner AND o.expires_at >= "
   "$2::bigint)) "
   "LIMIT $3::bigint FOR UPDATE SKIP LOCKED) AS picked "
   "WHERE i.endpoint = picked.endpoint AND i.message_id = picked.message_id "
   "RETURNING i.endpoint, i.message_id"},
  {pg_statement::release, "bus_release",
   "UPDATE bus_inbox SET owner = '' WHERE endpoint = $1 AND message_id = $2 AND "
   "dispatched_at IS NULL"},
  // Per endpoint: the records whose sends are not all out, their stored
  // sends, and when the oldest was received.
  {pg_statement::backlog, "bus_backlog",
   "SELECT i.endpoint, count(DISTINCT i.message_id), count(o.position), min(i.received_at) "
   "FROM bus_inbox AS i LEFT JOIN bus_outbox AS o "
   "ON o.endpoint = i.endpoint AND o.message_id = i.message_id "
   "WHERE i.dispatched_at IS NULL GROUP BY i.endpoint ORDER BY i.endpoint"},
  {pg_statement::stream_offset, "bus_stream_offset",
   "SELECT committed FROM bus_stream_offsets WHERE reader = $1 AND stream = $2"},
  {pg_statement::save_stream_offset, "bus_save_stream_offset",
   "INSERT INTO bus_stream_offsets (reader, stream, committed) VALUES ($1, $2, $3::bigint) "
   "ON CONFLICT (reader, stream) DO UPDATE SET committed = excluded.committed"},
}};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < statements.size(); ++i)
    if (static_cast<std::size_t>(statements[i].id) != i)
      return false;
  return true;
}
static_assert(in_enum_order(), "statements are looked up by their pg_statement");

const char* name_of(pg_statement s) { return statements[static_cast<std::size_t>(s)].name; }

std::string seconds_of(duration d) {
  // libpq's connect_timeout is whole seconds, and it treats 1 as 2.
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  return std::to_string(s < 2 ? 2 : s);
}

} // namespace

pg_result postgres_connection::run(pg_statement s,
                                   std::initializer_list<std::string_view> params) {
  if (broken())
    return {};
  // libpq reads text parameters up to their NUL.
  std::vector<std::string> owned(params.begin(), params.end());
  std::vector<const char*> values;
  values.reserve(owned.size());
  for (const auto& p : owned)
    values.push_back(p.c_str());
  return await_answer(PQsendQueryPrepared(conn, name_of(s), static_cast<int>(values.size()),
                                          values.data(), nullptr, nullptr, 0)
                      == 1);
}

pg_result postgres_connection::exec(const char* sql) {
  if (broken())
    return {};
  return await_answer(PQsendQuery(conn, sql) == 1);
}

pg_result postgres_connection::prepare(const char* name, const char* sql) {
  if (broken())
    return {};
  return await_answer(PQsendPrepare(conn, name, sql, 0, nullptr) == 1);
}

pg_result postgres_connection::await_answer(bool sent) {
  if (!sent)
    return {}; // PQerrorMessage says why
  using steady = std::chrono::steady_clock;
  const auto deadline = steady::now() + response_timeout;
  // Waits until the socket can take `events`; false once the deadline passed.
  auto ready = [&](short events) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
      if (left.count() <= 0)
        return false;
      pollfd p{PQsocket(conn), events, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30)));
      if (n > 0)
        return true;
      if (n < 0 && errno != EINTR)
        return true; // libpq's next call reports the socket's error
    }
  };
  // The statement out: libpq's nonblocking mode may hold part of it.
  for (int left; (left = PQflush(conn)) != 0;) {
    if (left < 0)
      return {};
    if (!ready(POLLIN | POLLOUT))
      return abandon("the statement could not be sent");
    if (PQconsumeInput(conn) == 0)
      return {};
  }
  // Its results, up to the null that ends them; the first failure wins,
  // as PQexec reports it.
  pg_result answer;
  for (;;) {
    while (PQisBusy(conn) == 1) {
      if (!ready(POLLIN))
        return abandon("no answer");
      if (PQconsumeInput(conn) == 0)
        return answer ? std::move(answer) : pg_result{}; // the connection broke
    }
    pg_result next(PQgetResult(conn));
    if (!next)
      return answer;
    if (!answer || PQresultStatus(answer.get()) != PGRES_FATAL_ERROR)
      answer = std::move(next);
  }
}

pg_result postgres_connection::abandon(const char* why) {
  // The server went silent (a failover, a partition, a proxy that hangs):
  // closed now, so that nothing waits on it again. Nonblocking, PQfinish's
  // goodbye to the server cannot block either.
  abandoned = std::string(why) + " from the server within " + to_hms(response_timeout)
              + " (the store's response_timeout); the connection is closed";
  PQfinish(conn);
  conn = nullptr;
  return {};
}

void attempt_socket::interrupt() noexcept {
  std::lock_guard lock(mutex);
  if (fd < 0)
    return;
  interrupted = true;
  ::shutdown(fd, SHUT_RDWR); // the waiting poll() wakes, and libpq reads the end
}

bool attempt_socket::forget() noexcept {
  std::lock_guard lock(mutex);
  fd = -1;
  return interrupted;
}

bool postgres_connection::broken() const noexcept {
  return conn == nullptr || PQstatus(conn) != CONNECTION_OK;
}

void postgres_connection::roll_back() noexcept {
  if (!broken() && PQtransactionStatus(conn) != PQTRANS_IDLE)
    (void)exec("ROLLBACK");
}

bool succeeded(const pg_result& r) noexcept {
  auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

postgres_pool::postgres_pool(postgres_store_settings s, std::string l)
  : settings(std::move(s)), label(std::move(l)), owner(new_store_owner()) {}

error postgres_pool::failure(const postgres_connection& c, std::string_view what,
                             const pg_result& r) const {
  std::string reason = !c.abandoned.empty()                               ? c.abandoned
                       : r && PQresultErrorMessage(r.get())[0] != '\0' ? PQresultErrorMessage(r.get())
                       : c.conn != nullptr                               ? PQerrorMessage(c.conn)
                                                                         : "";
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' '))
    reason.pop_back();
  std::string out = label + ": ";
  out += what;
  out += ": ";
  out += reason.empty() ? "no reason given" : reason;
  return error{errc::store_failure, std::move(out)};
}

result<std::unique_ptr<postgres_connection>> postgres_pool::take() {
  {
    std::lock_guard lock(mutex);
    if (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<postgres_connection>();
  c->response_timeout = settings.response_timeout;
  // The caller's string comes last so that it overrides these defaults.
  // Keepalives and the TCP user timeout end a connection whose packets go
  // unanswered (a partition), the handler's own blocking statements too;
  // over a Unix socket libpq ignores them.
  auto timeout = seconds_of(settings.connect_timeout);
  auto user_timeout = std::to_string(
    std::chrono::duration_cast<std::chrono::milliseconds>(settings.response_timeout).count());
  const char* keys[] = {"connect_timeout", "application_name", "keepalives", "keepalives_idle",
                        "keepalives_interval", "keepalives_count", "tcp_user_timeout", "dbname",
                        nullptr};
  const char* values[] = {timeout.c_str(), "bus", "1", "10", "5", "3", user_timeout.c_str(),
                          settings.conninfo.c_str(), nullptr};
  c->conn = PQconnectdbParams(keys, values, 1);
  if (c->conn == nullptr)
    return error{errc::store_failure, label + ": cannot connect: out of memory"};
  if (PQstatus(c->conn) != CONNECTION_OK)
    return failure(*c, "cannot connect");
  // The bus's statements wait with deadlines of their own (await_answer).
  if (PQsetnonblocking(c->conn, 1) != 0)
    return failure(*c, "cannot make the connection nonblocking");
  auto session = "SET client_min_messages = warning; SET lock_timeout = "
                 + std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(settings.lock_timeout)
                     .count());
  if (!succeeded(c->exec(session.c_str())))
    return failure(*c, "cannot set the session's lock timeout");
  if (!schema_checked.load(std::memory_order_acquire)) {
    if (auto checked = check_schema(*c); !checked)
      return checked.error();
    schema_checked.store(true, std::memory_order_release);
  }
  for (const auto& s : statements)
    if (auto prepared = c->prepare(s.name, s.sql); !succeeded(prepared))
      return failure(*c, "cannot prepare the bus's statements", prepared);
  return c;
}

result<void> postgres_pool::check_schema(postgres_connection& c) const {
  // Only when missing: CREATE INDEX IF NOT EXISTS takes a SHARE lock on its
  // table even when the index is there, so running the DDL on a database
  // in use would wait behind every open transaction that writes the inbox,
  // and hold up every later one meanwhile (a second process starting, a
  // pool's new connection while handlers run).
  auto present = c.exec("SELECT to_regclass('bus_store_schema') IS NOT NULL");
  if (!succeeded(present) || PQntuples(present.get()) != 1)
    return failure(c, "cannot look for the bus's tables", present);
  // "client_min_messages = warning": the NOTICEs of IF NOT EXISTS would go
  // to the process's stderr (libpq's default notice processor).
  if (std::string_view(PQgetvalue(present.get(), 0, 0)) != "t")
    if (auto created = c.exec(schema_sql); !succeeded(created)) {
      auto err = failure(c, "cannot create the bus's tables", created);
      c.roll_back();
      return err;
    }
  auto version = c.exec("SELECT max(version) FROM bus_store_schema");
  if (!succeeded(version) || PQntuples(version.get()) != 1)
    return failure(c, "cannot read the schema version", version);
  if (int v = std::atoi(PQgetvalue(version.get(), 0, 0)); v != schema_version)
    return error{errc::store_failure, label + ": its bus tables have schema version "
                                        + std::to_string(v) + ", this bus reads version "
                                        + std::to_string(schema_version)};
  return {};
}

void postgres_pool::give_back(std::unique_ptr<postgres_connection> c) {
  // Never lend out a connection inside a transaction: a path that failed
  // halfway, or a handler that began one of its own, ends here.
  c->roll_back();
  std::lock_guard lock(mutex);
  if (c->broken()) {
    idle.clear();
    return;
  }
  idle.push_back(std::move(c));
}

result<std::string> describe_conninfo(const std::string& conninfo) {
  char* message = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &message);
  if (options == nullptr) {
    std::string reason = message ? message : "out of memory";
    PQfreemem(message);
    while (!reason.empty() && reason.back() == '\n')
      reason.pop_back();
    return error{errc::invalid_configuration,
                 "the PostgreSQL store's connection string is malformed: " + reason};
  }
  std::string out;
  for (auto* o = options; o->keyword != nullptr; ++o) {
    bool shown = std::strcmp(o->keyword, "host") == 0 || std::strcmp(o->keyword, "hostaddr") == 0
                 || std::strcmp(o->keyword, "port") == 0 || std::strcmp(o->keyword, "dbname") == 0;
    if (shown && o->val != nullptr && o->val[0] != '\0') {
      if (!out.empty())
        out += ' ';
      out += o->keyword;
      out += '=';
      out += o->val;
    }
  }
  PQconninfoFree(options);
  return "postgresql '" + (out.empty() ? std::string("libpq's defaults") : out) + "'";
}

namespace {

bool is_utf8_without_nul(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t length = c < 0x80           ? 1
                         : (c >> 5) == 0x6  ? 2
                         : (c >> 4) == 0xe  ? 3
                         : (c >> 3) == 0x1e ? 4
                                            : 0;
    if (c == 0 || length == 0 || i + length > s.size())
      return false;
    std::uint32_t point = length == 1 ? c : c & (0x7f >> length);
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(s[i + k]);
      if ((next >> 6) != 0x2)
        return false;
      point = (point << 6) | (next & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and points beyond Unicode are what
    // PostgreSQL refuses too.
    static constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < least[length] || (point >= 0xd800 && point <= 0xdfff) || point > 0x10ffff)
      return false;
    i += length;
  }
  return true;
}

} // namespace

result<std::string> stored_message_id(const std::string& id) {
  if (id.size() <= max_plain_id && is_utf8_without_nul(id))
    return id;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(id.data(), id.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    return error{errc::store_failure, "OpenSSL cannot hash a message id with SHA-256"};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "bus-sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1)
      out += ',';
    out += '"';
    for (char ch : item) {
      if (ch == '"' || ch == '\\')
        out += '\\';
      out += ch;
    }
    out += '"';
  }
  out += '}';
  return out;
}

} // namespace bus::detail
