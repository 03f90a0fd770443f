// SQLite's C API behind a thin RAII layer: a statement, a connection with
// the bus's statements prepared once, and a pool that lends a connection
// to one thread at a time (each consumer thread runs its own attempt).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>

#include "bus/error.hpp"
#include "bus/sqlite_store.hpp"

namespace bus::detail {

// A prepared statement, reset after each use so that it holds no lock.
class sqlite_statement {
public:
  sqlite_statement() = default;
  sqlite_statement(sqlite3* db, std::string_view sql);
  ~sqlite_statement();
  sqlite_statement(const sqlite_statement&) = delete;
  sqlite_statement& operator=(const sqlite_statement&) = delete;

  // Prepares `sql` on `db` (once, for a default-made statement).
  [[nodiscard]] bool prepare(sqlite3* db, std::string_view sql);
  [[nodiscard]] bool prepared() const noexcept { return stmt_ != nullptr; }
  [[nodiscard]] sqlite3_stmt* get() const noexcept { return stmt_; }

private:
  sqlite3_stmt* stmt_ = nullptr;
};

struct sqlite_connection {
  sqlite3* db = nullptr;
  sqlite_statement begin, commit, rollback;
  sqlite_statement insert_inbox, dispatched_at, stored_rows, insert_outbox, nothing_to_send,
    mark_inbox, delete_outbox, forget_inbox, clean_inbox, renew_lease, orphans, claim, release,
    backlog, stream_offset, save_stream_offset;

  sqlite_connection() = default;
  sqlite_connection(const sqlite_connection&) = delete;
  sqlite_connection& operator=(const sqlite_connection&) = delete;
  ~sqlite_connection();
};

struct sqlite_pool {
  sqlite_store_settings settings;
  std::string owner; // this store's name as the owner of its records: random, per open
  std::mutex mutex;
  std::vector<std::unique_ptr<sqlite_connection>> idle;

  explicit sqlite_pool(sqlite_store_settings s);

  // An idle connection, or a new one; errc::store_failure if it cannot open.
  result<std::unique_ptr<sqlite_connection>> take();
  void give_back(std::unique_ptr<sqlite_connection> c);

  // errc::store_failure: "sqlite '<path>': <what>: <SQLite's message>".
  [[nodiscard]] error failure(sqlite3* db, std::string_view what) const;
};

// A connection borrowed from the pool, returned when the lease ends.
struct sqlite_lease {
  std::shared_ptr<sqlite_pool> pool;
  std::unique_ptr<sqlite_connection> connection;

  sqlite_lease(std::shared_ptr<sqlite_pool> p, std::unique_ptr<sqlite_connection> c)
    : pool(std::move(p)), connection(std::move(c)) {}
  ~sqlite_lease() {
    if (connection)
      pool->give_back(std::move(connection));
  }
  sqlite_lease(const sqlite_lease&) = delete;
  sqlite_lease& operator=(const sqlite_lease&) = delete;
};

// Runs a statement without rows to the end, binding `texts` then `ints`
// in order; resets it. SQLITE_DONE, or SQLite's code.
int run(sqlite_statement& s, std::initializer_list<std::string_view> texts,
        std::initializer_list<long long> ints = {});

} // namespace bus::detail
