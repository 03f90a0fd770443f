// The store conformance suite's PostgreSQL: a database of the test's own
// on the fixture's server.
#pragma once

#include <libpq-fe.h>

#include "bus/postgres_store.hpp"
#include "stores/postgres_server.hpp"

#define BUS_STORE_NAME "postgresql"

namespace bus::test {

class store_backend {
public:
  using store_type = postgres_store;
  using transaction_type = postgres_transaction;

  // Another process's store on the same database.
  [[nodiscard]] std::shared_ptr<postgres_store>
  open(duration lock_timeout = std::chrono::seconds(10)) const {
    auto store = postgres_store::open({conninfo_, lock_timeout});
    INFO((store ? "" : store.error().message));
    REQUIRE(store);
    return *store;
  }
  // The store, or why it could not open.
  [[nodiscard]] result<std::shared_ptr<postgres_store>> try_open() const {
    return postgres_store::open({conninfo_});
  }
  // Runs the handler's own SQL through the attempt's connection.
  static void handler_exec(store_transaction& t, const std::string& sql) {
    PGconn* conn = connection_of(t);
    PGresult* r = PQexec(conn, sql.c_str());
    INFO(sql << ": " << PQerrorMessage(conn));
    auto status = PQresultStatus(r);
    PQclear(r);
    REQUIRE(status == PGRES_COMMAND_OK);
  }
  // The SQL of the handler's own table of orders.
  static constexpr const char* orders_table =
    "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)";
  // Holds what makes the store's next inbox record wait, as an operator's
  // long transaction would; `let_go` ends it.
  static constexpr const char* hold_lock = "BEGIN; LOCK TABLE bus_inbox IN EXCLUSIVE MODE";
  static constexpr const char* let_go = "ROLLBACK";
  // What a store error then names: the database and the lock.
  [[nodiscard]] std::string location() const { return "dbname=bus_test_"; }
  static constexpr const char* lock_word = "lock timeout";

  [[nodiscard]] const pg_reader& db() const { return reader_; }
  [[nodiscard]] const std::string& conninfo() const { return conninfo_; }
  // The attempt's libpq connection, for a handler's own calls.
  static PGconn* connection_of(store_transaction& t) {
    auto* typed = dynamic_cast<postgres_transaction*>(&t);
    REQUIRE(typed != nullptr);
    return typed->connection();
  }

private:
  postgres_server server_;
  std::string conninfo_ = server_.fresh_database();
  pg_reader reader_{conninfo_};
};

} // namespace bus::test
