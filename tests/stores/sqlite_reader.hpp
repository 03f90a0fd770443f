// A connection of the test's own to a store's file, as another program
// (an operator's sqlite3 shell) would read it.
#pragma once

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <string>

namespace bus::test {

struct reader {
  sqlite3* db = nullptr;
  explicit reader(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000); // a process beside it may be writing
  }
  ~reader() { sqlite3_close(db); }
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  // The single number `sql` selects.
  [[nodiscard]] long long number(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    auto value = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return value;
  }
  void exec(const std::string& sql) const {
    INFO(sql);
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  }
};

} // namespace bus::test
