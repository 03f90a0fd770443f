// The SQLite store's own cases (issue 21); what every store does is in
// store_port_test.cpp.
#include <catch2/catch.hpp>

#include "bus/sqlite_store.hpp"
#include "support/scratch_directory.hpp"

TEST_CASE("sqlite: a file that cannot be a store is refused when the store opens") {
  bus::test::scratch_directory dir;
  SECTION("a folder that does not exist") {
    auto store = bus::sqlite_store::open({dir.file("missing/bus.db")});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::store_failure);
    CHECK_THAT(store.error().message, Catch::Contains("missing/bus.db"));
  }
  SECTION("no path") {
    auto store = bus::sqlite_store::open({});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::invalid_configuration);
  }
}
