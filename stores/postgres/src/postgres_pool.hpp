// libpq behind a thin RAII layer: a result, a connection with the bus's
// statements prepared once, and a pool that lends a connection to one
// thread at a time (each consumer thread runs its own attempt).
//
// Every statement of the bus has a deadline: it is sent with libpq's
// asynchronous calls and its answer awaited with poll() for at most the
// settings' response_timeout. A connection whose server did not answer in
// time is closed at once and never lent again (its next answer, if one
// came, would belong to a statement nobody waits for any more).
#pragma once

#include <atomic>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <libpq-fe.h>

#include "bus/error.hpp"
#include "bus/postgres_store.hpp"

namespace bus::detail {

struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result = std::unique_ptr<PGresult, pg_result_deleter>;

// The bus's prepared statements, by name (see postgres_pool.cpp).
enum class pg_statement {
  insert_inbox, dispatched_at, stored_rows, insert_outbox, nothing_to_send, mark_dispatched,
  forget_inbox, clean_inbox, renew_lease, claim_orphans, release, backlog, stream_offset,
  save_stream_offset
};

struct postgres_connection {
  PGconn* conn = nullptr;
  duration response_timeout{}; // how long a statement of the bus waits for its answer
  // Why the connection was given up ("no answer within 30 s"); empty while
  // it is usable. Once set, conn is closed (null).
  std::string abandoned;

  postgres_connection() = default;
  postgres_connection(const postgres_connection&) = delete;
  postgres_connection& operator=(const postgres_connection&) = delete;
  ~postgres_connection() { PQfinish(conn); }

  // Runs a prepared statement with text parameters; null if it was not
  // sent, the connection broke, or no answer came within response_timeout.
  pg_result run(pg_statement s, std::initializer_list<std::string_view> params);
  // Runs SQL without parameters ("BEGIN", "COMMIT", the schema), the same
  // way; several statements give the first failure, else the last result.
  pg_result exec(const char* sql);
  // Prepares a statement, the same way.
  pg_result prepare(const char* name, const char* sql);
  // Ends a transaction left open, if any; harmless on a broken connection.
  void roll_back() noexcept;
  // The server closed it or it was abandoned: it must not be lent again.
  [[nodiscard]] bool broken() const noexcept;

private:
  // Sends what libpq holds and collects the statement's results, each wait
  // on the socket bounded by the deadline; `sent`: libpq took the statement.
  pg_result await_answer(bool sent);
  pg_result abandon(const char* why);
};

// True when `r` finished as a statement without rows or with rows should.
[[nodiscard]] bool succeeded(const pg_result& r) noexcept;

struct postgres_pool {
  postgres_store_settings settings;
  std::string label; // "postgresql 'host=... port=... dbname=...'": never the password
  std::string owner; // this store's name as the owner of its records: random, per open
  std::mutex mutex;
  std::vector<std::unique_ptr<postgres_connection>> idle;
  // The bus's tables were found (or made) at the version this bus reads:
  // once per pool, at open(), not at every new connection.
  std::atomic<bool> schema_checked{false};

  postgres_pool(postgres_store_settings s, std::string label);

  // An idle connection, or a new one with the bus's statements prepared;
  // errc::store_failure if the server cannot be reached.
  result<std::unique_ptr<postgres_connection>> take();
  // Takes a connection back unless the server broke it, then every idle
  // one goes too: they all reached the same server, which is gone or
  // restarted, and each would fail one attempt to find out.
  void give_back(std::unique_ptr<postgres_connection> c);

  // Creates the bus's tables if they are missing, then checks their version.
  [[nodiscard]] result<void> check_schema(postgres_connection& c) const;

  // errc::store_failure: "<label>: <what>: <the server's message>".
  [[nodiscard]] error failure(const postgres_connection& c, std::string_view what,
                              const pg_result& r = {}) const;
};

// The socket of an attempt's connection while the attempt holds it, for
// the interrupter another thread calls (store_transaction::interrupter):
// shut down, never closed, so the descriptor stays the connection's; and
// forgotten before the connection goes back to the pool, so that an
// interrupter called late never touches the connection's next attempt.
struct attempt_socket {
  std::mutex mutex;
  int fd = -1;              // guarded; -1 once forgotten
  bool interrupted = false; // guarded

  explicit attempt_socket(int socket) : fd(socket) {}
  void interrupt() noexcept;
  // Forgets the socket; true if it was interrupted meanwhile.
  bool forget() noexcept;
};

// A connection borrowed from the pool, returned when the lease ends (not
// if an attempt's interrupter shut its socket down).
struct postgres_lease {
  std::shared_ptr<postgres_pool> pool;
  std::unique_ptr<postgres_connection> connection;
  std::shared_ptr<attempt_socket> socket; // an attempt's lease only

  postgres_lease(std::shared_ptr<postgres_pool> p, std::unique_ptr<postgres_connection> c)
    : pool(std::move(p)), connection(std::move(c)) {}
  ~postgres_lease() {
    if (socket && socket->forget())
      return; // shut down: the connection goes, whatever libpq thinks of it
    if (connection)
      pool->give_back(std::move(connection));
  }
  postgres_lease(const postgres_lease&) = delete;
  postgres_lease& operator=(const postgres_lease&) = delete;
};

// What the server says of a connection string (host, port, dbname; never a
// password), for error messages; errc::invalid_configuration if libpq
// cannot parse it.
result<std::string> describe_conninfo(const std::string& conninfo);

// The message id as the bus's tables keep it. A message id is any bytes
// (send_options::message_id, or what a foreign sender put in AMQP's
// message-id), but a text column holds neither NUL nor bytes that are not
// UTF-8, and a primary key's index entry at most about 2.7 kB; so an id
// that is UTF-8 without NUL and at most max_plain_id bytes is kept as it
// is, and any other as "bus-sha256:" and the hex SHA-256 of its bytes: two
// distinct ids stay two records, and the same id finds its record again.
// A kept form is kept again as it is. errc::store_failure only if OpenSSL
// cannot hash (out of memory).
inline constexpr std::size_t max_plain_id = 1024;
[[nodiscard]] result<std::string> stored_message_id(const std::string& id);

// A PostgreSQL text[] literal of `items`, for one INSERT of many rows.
std::string text_array(const std::vector<std::string>& items);

} // namespace bus::detail
