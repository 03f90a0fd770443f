// The store conformance suite's SQLite: a file of the test's own.
#pragma once

#include <sqlite3.h>

#include "bus/sqlite_store.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/scratch_directory.hpp"

#define BUS_STORE_NAME "sqlite"

namespace bus::test {

class store_backend {
public:
  using store_type = sqlite_store;
  using transaction_type = sqlite_transaction;

  // Another process's store on the same file.
  [[nodiscard]] std::shared_ptr<sqlite_store>
  open(duration lock_timeout = std::chrono::seconds(10)) const {
    auto store = sqlite_store::open({path_, lock_timeout});
    REQUIRE(store);
    return *store;
  }
  // The store, or why it could not open.
  [[nodiscard]] result<std::shared_ptr<sqlite_store>> try_open() const {
    return sqlite_store::open({path_});
  }
  // Runs the handler's own SQL through the attempt's connection.
  static void handler_exec(store_transaction& t, const std::string& sql) {
    auto* typed = dynamic_cast<sqlite_transaction*>(&t);
    REQUIRE(typed != nullptr);
    INFO(sql);
    REQUIRE(sqlite3_exec(typed->connection(), sql.c_str(), nullptr, nullptr, nullptr)
            == SQLITE_OK);
  }
  // The SQL of the handler's own table of orders.
  static constexpr const char* orders_table =
    "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)";
  // Holds what makes the store's next inbox record wait, as an operator's
  // long transaction would; `let_go` ends it.
  static constexpr const char* hold_lock = "BEGIN IMMEDIATE";
  static constexpr const char* let_go = "ROLLBACK";
  // What a store error then names: the database and the lock.
  [[nodiscard]] std::string location() const { return "bus.db"; }
  static constexpr const char* lock_word = "locked";

  [[nodiscard]] const reader& db() const { return reader_; }

private:
  scratch_directory dir_;
  std::string path_ = dir_.file("bus.db");
  reader reader_{path_};
};

} // namespace bus::test
