// The PostgreSQL store's own cases (issue 21): a server that cannot be
// reached or crashes, a handler's statement that aborts the transaction,
// one cleaner per database. What every store does is in
// store_port_test.cpp.
#include <catch2/catch.hpp>

#include "stores/postgres_backend.hpp"
#include "support/tcp_relay.hpp"

using namespace std::chrono_literals;
using bus::inbox_state;
using bus::test::pg_reader;
using bus::test::postgres_server;
using bus::test::store_backend;

namespace {

const bus::time_point fixed_now = bus::from_unix_ms(1'700'000'000'000);

// The key of the cleaners' advisory lock (stores/postgres/src/postgres_pool.cpp).
constexpr const char* cleaner_lock = "7166953616166481921";

} // namespace

TEST_CASE("postgresql: a server that cannot be reached or a bad connection string is refused "
          "when the store opens") {
  SECTION("no server behind the socket") {
    bus::test::scratch_directory dir;
    auto store = bus::postgres_store::open({"host=" + dir.file("none") + " dbname=orders"});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::store_failure);
    CHECK_THAT(store.error().message,
               Catch::Contains("dbname=orders") && Catch::Contains("cannot connect")
                 && Catch::Contains("No such file"));
  }
  SECTION("a database that does not exist") {
    postgres_server server;
    auto store = bus::postgres_store::open({server.conninfo() + " dbname=no_such_db"});
    REQUIRE_FALSE(store);
    CHECK_THAT(store.error().message, Catch::Contains("\"no_such_db\" does not exist"));
  }
  SECTION("a malformed connection string") {
    auto store = bus::postgres_store::open({"host=x nonsense"});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::invalid_configuration);
    CHECK_THAT(store.error().message, Catch::Contains("malformed"));
  }
  SECTION("none") {
    auto store = bus::postgres_store::open({});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::invalid_configuration);
  }
}

TEST_CASE("postgresql: the password of a connection string never shows in an error") {
  bus::test::scratch_directory dir;
  auto store =
    bus::postgres_store::open({"host=" + dir.file("none") + " user=bus password=s3cret"});
  REQUIRE_FALSE(store);
  CHECK_THAT(store.error().message, !Catch::Contains("s3cret"));
}

TEST_CASE("postgresql: a handler's statement that fails aborts the attempt, and nothing of it is "
          "kept") {
  store_backend b;
  auto store = b.open();
  b.db().exec(store_backend::orders_table);
  bus::inbox_key key{"billing", "m-1"};
  auto e = store->receive(key, fixed_now);
  REQUIRE(e);
  store_backend::handler_exec(*e->transaction, "INSERT INTO orders VALUES ('o-1')");
  // The handler swallowed its driver's error: the transaction is aborted.
  PQclear(PQexec(b.connection_of(*e->transaction), "INSERT INTO no_such_table VALUES (1)"));
  auto committed = e->transaction->commit({"a send"});
  REQUIRE_FALSE(committed);
  CHECK_THAT(committed.error().message, Catch::Contains("aborted the transaction"));
  CHECK(b.db().number("SELECT count(*) FROM orders") == 0);
  CHECK(b.db().number("SELECT count(*) FROM bus_inbox") == 0);
  auto retry = store->receive(key, fixed_now);
  REQUIRE(retry);
  CHECK(retry->state == inbox_state::first);
}

TEST_CASE("postgresql: one cleaner at a time per database: a second one deletes nothing while the "
          "first runs") {
  store_backend b;
  auto store = b.open();
  for (int i = 0; i < 3; ++i) {
    bus::inbox_key key{"billing", "m-" + std::to_string(i)};
    auto e = store->receive(key, fixed_now);
    REQUIRE(e);
    REQUIRE(e->transaction->commit({}));
  }
  pg_reader other_cleaner(b.conninfo());
  other_cleaner.exec(std::string("SELECT pg_advisory_lock(") + cleaner_lock + ")");
  CHECK(*store->clean("billing", fixed_now + 1h, 10) == 0);
  CHECK(b.db().number("SELECT count(*) FROM bus_inbox") == 3);
  other_cleaner.exec(std::string("SELECT pg_advisory_unlock(") + cleaner_lock + ")");
  CHECK(*store->clean("billing", fixed_now + 1h, 10) == 3);
}

TEST_CASE("postgresql: a store lives through a crash of its server: it fails while the server is "
          "down and works again once it is back, without reopening") {
  postgres_server server(postgres_server::own_t{});
  auto conninfo = server.fresh_database();
  auto opened = bus::postgres_store::open({conninfo, 10s, 2s});
  REQUIRE(opened);
  auto store = *opened;
  bus::inbox_key key{"billing", "m-1"};

  auto open_attempt = store->receive(key, fixed_now); // a transaction across the crash
  REQUIRE(open_attempt);
  REQUIRE(open_attempt->state == inbox_state::first);
  server.crash();
  auto committed = open_attempt->transaction->commit({"a send"});
  REQUIRE_FALSE(committed);
  CHECK(committed.error().code == bus::errc::store_failure);
  auto down = store->receive(key, fixed_now);
  REQUIRE_FALSE(down);
  CHECK_THAT(down.error().message, Catch::Contains("cannot connect"));

  server.resume();
  // Every connection of the pool died with the server: the first use after
  // it finds out and the pool lets all of them go, so one attempt fails at
  // most, and the next reconnects.
  auto back = store->receive(key, fixed_now);
  if (!back)
    back = store->receive(key, fixed_now);
  REQUIRE(back);
  CHECK(back->state == inbox_state::first); // nothing of the crashed attempt was kept
  REQUIRE(back->transaction->commit({"a send"}));
  REQUIRE(store->mark_dispatched(key, fixed_now));
  pg_reader r(conninfo);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NOT NULL") == 1);
}

TEST_CASE("postgresql: a store opening beside transactions that write the inbox neither waits "
          "for them nor holds them up") {
  store_backend b;
  auto running = b.open();
  // A handler of a live process inside its attempt: the inbox is written.
  auto attempt = running->receive({"billing", "m-1"}, fixed_now);
  REQUIRE(attempt);
  REQUIRE(attempt->state == inbox_state::first);
  // A second process starting now, and its pool's next connections: none
  // of them may wait for that transaction (lock timeout 200 ms).
  auto opened = bus::postgres_store::open({b.conninfo(), 200ms});
  INFO((opened ? "" : opened.error().message));
  REQUIRE(opened);
  auto one = (*opened)->receive({"billing", "m-2"}, fixed_now);
  auto two = (*opened)->receive({"billing", "m-3"}, fixed_now); // a second connection of its pool
  REQUIRE(one);
  REQUIRE(two);
  REQUIRE(one->transaction->commit({}));
  REQUIRE(two->transaction->commit({}));
  REQUIRE(attempt->transaction->commit({}));
}

TEST_CASE("postgresql, a silent network: a statement that gets no answer fails as a store_error "
          "within the response timeout, and the store works again once the server answers") {
  postgres_server server;
  auto database = server.fresh_database();
  bus::test::tcp_relay relay(bus::test::tcp_relay::unix_socket{server.socket_path()});
  // Later keywords win: the relay's TCP port instead of the server's socket.
  auto through_relay = database + " host=127.0.0.1 port=" + std::to_string(relay.port());
  bus::postgres_store_settings settings{through_relay, 200ms, 2s};
  settings.response_timeout = 1s;
  auto opened = bus::postgres_store::open(settings);
  REQUIRE(opened);
  auto store = *opened;
  auto first = store->receive({"billing", "m-1"}, fixed_now);
  REQUIRE(first);
  REQUIRE(first->transaction->commit({}));

  relay.pause(); // the connections stay open; nothing comes back
  auto asked = std::chrono::steady_clock::now();
  auto silent = store->receive({"billing", "m-2"}, fixed_now);
  auto waited = std::chrono::steady_clock::now() - asked;
  REQUIRE_FALSE(silent);
  CHECK(silent.error().code == bus::errc::store_failure);
  CHECK_THAT(silent.error().message,
             Catch::Contains("no answer from the server within 00:00:01")
               && Catch::Contains("response_timeout"));
  CHECK(waited >= 1s);
  CHECK(waited < 1s + 3s); // the deadline, and a loaded machine's slack

  relay.resume();
  auto back = store->receive({"billing", "m-2"}, fixed_now);
  INFO((back ? "" : back.error().message));
  REQUIRE(back);
  CHECK(back->state == inbox_state::first);
  REQUIRE(back->transaction->commit({}));
}

TEST_CASE("postgresql: a response timeout that could cut a lock wait short is refused") {
  bus::postgres_store_settings settings{"host=/nowhere dbname=orders", 10s, 2s};
  settings.response_timeout = 10s;
  auto store = bus::postgres_store::open(settings);
  REQUIRE_FALSE(store);
  CHECK(store.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(store.error().message,
             Catch::Contains("response timeout (00:00:10) must be longer than its lock timeout"));
}
