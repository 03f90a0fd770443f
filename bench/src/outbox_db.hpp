// The database of one outbox run: a SQLite file in a temporary folder, or a
// PostgreSQL database of its own on the server of --conninfo. Both get the
// bus's tables (the bus's own store creates them) and the handler's table,
// and are removed when the run ends, so that every run starts empty and
// none leaves anything behind.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/message_store.hpp"
#include "workload.hpp"

struct sqlite3;
struct pg_conn;

namespace bench {

// The endpoint whose inbox the cases fill, and the queue its handler
// sends to (declared on the transport; nobody consumes it).
inline const std::string outbox_endpoint = "bench";
inline const std::string outbox_next_queue = "bench-next";

struct sqlite_closer {
  void operator()(sqlite3* db) const noexcept;
};
struct pg_closer {
  void operator()(pg_conn* c) const noexcept;
};
using sqlite_ptr = std::unique_ptr<sqlite3, sqlite_closer>;
using pg_ptr = std::unique_ptr<pg_conn, pg_closer>;

// Runs `sql` (no results wanted); throws std::runtime_error with the
// database's reason on failure: a benchmark run that cannot write is void.
void exec(sqlite3* db, const char* sql);
void exec(pg_conn* c, const char* sql);

// The handler's work, the same on every side of the outbox cases: one
// INSERT of the message into the user's table, a statement prepared for it
// (SQLite) or sent with its parameters in one round trip (PostgreSQL), as a
// handler that keeps no statements of its own does. Throws on failure.
void insert_order(sqlite3* db, const std::string& message_id, std::uint64_t seq);
void insert_order(pg_conn* c, const std::string& message_id, std::uint64_t seq);

class bench_database {
public:
  // --store sqlite|postgres; --conninfo for postgres (the server's admin
  // database: the run creates a database of its own there).
  explicit bench_database(const case_args& args);
  ~bench_database(); // the store first, then the file or the database
  bench_database(const bench_database&) = delete;
  bench_database& operator=(const bench_database&) = delete;

  [[nodiscard]] bool is_sqlite() const noexcept { return sqlite_; }
  [[nodiscard]] const std::string& kind() const noexcept { return kind_; }
  // The bus's store on this database (what e.outbox() takes).
  [[nodiscard]] const std::shared_ptr<bus::message_store>& store() const noexcept { return store_; }

  // New connections with the store's own settings (SQLite: WAL,
  // synchronous=NORMAL, the same busy timeout), for the raw loop and the
  // plain handler. Only the one of this database's kind works.
  [[nodiscard]] sqlite_ptr open_sqlite() const;
  [[nodiscard]] pg_ptr open_postgres() const;

  // What the inbox takes on disk, per record: SQLite the pages of
  // bus_inbox and its indexes (dbstat) and the whole file (page_count *
  // page_size, after a WAL checkpoint, without VACUUM); PostgreSQL
  // pg_total_relation_size('bus_inbox') (table, indexes, TOAST; no VACUUM).
  [[nodiscard]] nlohmann::json inbox_bytes() const;

private:
  std::string kind_;
  bool sqlite_ = true;
  std::string dir_;            // SQLite: the temporary folder of the file
  std::string path_;           // SQLite: the file
  std::string admin_conninfo_; // PostgreSQL: the server's admin database
  std::string database_;       // PostgreSQL: this run's database
  std::string conninfo_;       // PostgreSQL: a connection string for it
  std::shared_ptr<bus::message_store> store_;
};

} // namespace bench
