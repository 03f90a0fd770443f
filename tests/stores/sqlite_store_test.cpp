// The SQLite store against a real database file (issue 21): the inbox
// record, the handler's transaction, the stored sends and their mark.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <future>
#include <thread>

#include "bus/sqlite_store.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;
using bus::inbox_state;
using bus::test::reader;

namespace {

const bus::time_point now = bus::from_unix_ms(1'700'000'000'000);

std::shared_ptr<bus::sqlite_store> open_store(const std::string& path,
                                              bus::duration busy_timeout = 10s) {
  auto store = bus::sqlite_store::open({path, busy_timeout});
  REQUIRE(store);
  return *store;
}

// The handler's own table and row, written through its transaction.
void write_order(bus::sqlite_transaction& t, const std::string& id) {
  auto sql = "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY); INSERT INTO orders VALUES ('"
             + id + "');";
  REQUIRE(sqlite3_exec(t.connection(), sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
}

bus::sqlite_transaction& typed(bus::inbox_entry& e) {
  auto* t = dynamic_cast<bus::sqlite_transaction*>(e.transaction.get());
  REQUIRE(t != nullptr);
  return *t;
}

} // namespace

TEST_CASE("sqlite: a handled message's writes and sends commit together, then its copies are "
          "recognised") {
  bus::test::scratch_directory dir;
  auto path = dir.file("bus.db");
  auto store = open_store(path);
  bus::inbox_key key{"billing", "m-1"};

  auto first = store->receive(key, now);
  REQUIRE(first);
  CHECK(first->state == inbox_state::first);
  write_order(typed(*first), "o-1");
  REQUIRE(first->transaction->commit({"send one", "send two"}));

  reader r(path);
  CHECK(r.number("SELECT count(*) FROM orders") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_outbox") == 2);

  // A copy before the sends were marked: the stored sends, in order.
  auto copy = store->receive(key, now);
  REQUIRE(copy);
  CHECK(copy->state == inbox_state::stored);
  CHECK(copy->transaction == nullptr);
  CHECK(copy->stored == std::vector<std::string>{"send one", "send two"});

  REQUIRE(store->mark_dispatched(key, now + 5ms));
  REQUIRE(store->mark_dispatched(key, now + 9ms)); // idempotent: the first time stays
  CHECK(r.number("SELECT count(*) FROM bus_outbox") == 0);
  CHECK(r.number("SELECT dispatched_at FROM bus_inbox") == bus::to_unix_ms(now + 5ms));

  auto later = store->receive(key, now);
  REQUIRE(later);
  CHECK(later->state == inbox_state::dispatched);
  CHECK(later->stored.empty());
  // The same message id on another endpoint is another delivery.
  auto elsewhere = store->receive({"shipping", "m-1"}, now);
  REQUIRE(elsewhere);
  CHECK(elsewhere->state == inbox_state::first);
}

TEST_CASE("sqlite: a rolled back attempt leaves nothing, its inbox record included") {
  bus::test::scratch_directory dir;
  auto path = dir.file("bus.db");
  auto store = open_store(path);
  reader r(path);
  r.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)");
  bus::inbox_key key{"billing", "m-1"};

  SECTION("rolled back") {
    auto e = store->receive(key, now);
    REQUIRE(e);
    write_order(typed(*e), "o-1");
    e->transaction->rollback();
    e->transaction->rollback(); // twice is harmless
  }
  SECTION("dropped unfinished, as a consumer that died") {
    auto e = store->receive(key, now);
    REQUIRE(e);
    write_order(typed(*e), "o-1");
  }
  CHECK(r.number("SELECT count(*) FROM orders") == 0);
  CHECK(r.number("SELECT count(*) FROM bus_inbox") == 0);
  auto again = store->receive(key, now);
  REQUIRE(again);
  CHECK(again->state == inbox_state::first);
}

TEST_CASE("sqlite: an attempt that sends nothing is done at its commit") {
  bus::test::scratch_directory dir;
  auto store = open_store(dir.file("bus.db"));
  auto e = store->receive({"billing", "m-1"}, now);
  REQUIRE(e);
  REQUIRE(e->transaction->commit({}));
  auto copy = store->receive({"billing", "m-1"}, now);
  REQUIRE(copy);
  CHECK(copy->state == inbox_state::dispatched);
}

TEST_CASE("sqlite: a handler that commits its transaction itself fails its attempt, and the retry "
          "runs it again") {
  bus::test::scratch_directory dir;
  auto store = open_store(dir.file("bus.db"));
  bus::inbox_key key{"billing", "m-1"};
  auto e = store->receive(key, now);
  REQUIRE(e);
  REQUIRE(sqlite3_exec(typed(*e).connection(), "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  auto committed = e->transaction->commit({"a send"});
  REQUIRE_FALSE(committed);
  CHECK(committed.error().code == bus::errc::store_failure);
  CHECK_THAT(committed.error().message, Catch::Contains("ended the transaction itself"));
  auto retry = store->receive(key, now);
  REQUIRE(retry);
  CHECK(retry->state == inbox_state::first);
}

TEST_CASE("sqlite: a second copy of a message waits for the first's transaction, then sees it "
          "handled") {
  bus::test::scratch_directory dir;
  auto store = open_store(dir.file("bus.db"));
  bus::inbox_key key{"billing", "m-1"};
  auto first = store->receive(key, now);
  REQUIRE(first);
  REQUIRE(first->state == inbox_state::first);
  // The copy's receive cannot finish while the first holds the write lock:
  // whatever the threads' timing, it sees the first's commit.
  auto copy = std::async(std::launch::async, [&] { return store->receive(key, now); });
  REQUIRE(first->transaction->commit({}));
  auto seen = copy.get();
  REQUIRE(seen);
  CHECK(seen->state == inbox_state::dispatched);
}

TEST_CASE("sqlite: a database locked past the busy timeout fails the attempt with a store failure") {
  bus::test::scratch_directory dir;
  auto path = dir.file("bus.db");
  auto store = open_store(path, 20ms);
  reader other(path);
  other.exec("BEGIN IMMEDIATE");
  auto e = store->receive({"billing", "m-1"}, now);
  REQUIRE_FALSE(e);
  CHECK(e.error().code == bus::errc::store_failure);
  CHECK_THAT(e.error().message, Catch::Contains("bus.db") && Catch::Contains("locked"));
  other.exec("ROLLBACK");
  auto later = store->receive({"billing", "m-1"}, now);
  REQUIRE(later);
  CHECK(later->state == inbox_state::first);
}

TEST_CASE("sqlite: a file that cannot be a store is refused when the store opens") {
  bus::test::scratch_directory dir;
  SECTION("a folder that does not exist") {
    auto store = bus::sqlite_store::open({dir.file("missing/bus.db")});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::store_failure);
    CHECK_THAT(store.error().message, Catch::Contains("missing/bus.db"));
  }
  SECTION("tables of a later bus") {
    auto path = dir.file("bus.db");
    open_store(path);
    reader(path).exec("UPDATE bus_store_schema SET version = 2");
    auto store = bus::sqlite_store::open({path});
    REQUIRE_FALSE(store);
    CHECK_THAT(store.error().message, Catch::Contains("schema version 2"));
  }
  SECTION("no path") {
    auto store = bus::sqlite_store::open({});
    REQUIRE_FALSE(store);
    CHECK(store.error().code == bus::errc::invalid_configuration);
  }
}

TEST_CASE("sqlite: a cleanup deletes an endpoint's records dispatched before the cut, a batch at a "
          "time, and never a record whose sends are not out") {
  bus::test::scratch_directory dir;
  auto path = dir.file("bus.db");
  auto store = open_store(path);
  auto handle = [&](const std::string& endpoint, const std::string& id, bus::time_point at,
                    bool dispatched) {
    auto e = store->receive({endpoint, id}, at);
    REQUIRE(e);
    REQUIRE(e->transaction->commit({"a send"}));
    if (dispatched)
      REQUIRE(store->mark_dispatched({endpoint, id}, at));
  };
  for (int i = 0; i < 5; ++i)
    handle("billing", "old-" + std::to_string(i), now, true);
  handle("billing", "waiting", now, false);  // old, but its send never went out
  handle("billing", "recent", now + 2h, true);
  handle("shipping", "old", now, true);      // another endpoint's

  auto cut = now + 1h;
  std::vector<std::size_t> batches;
  for (;;) {
    auto cleaned = store->clean("billing", cut, 2);
    REQUIRE(cleaned);
    batches.push_back(*cleaned);
    if (*cleaned < 2)
      break;
  }
  CHECK(batches == std::vector<std::size_t>{2, 2, 1});
  reader r(path);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'billing'") == 2);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE message_id = 'waiting'") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_outbox WHERE message_id = 'waiting'") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'shipping'") == 1);
  // A cleaned message is new again.
  auto again = store->receive({"billing", "old-0"}, now + 3h);
  REQUIRE(again);
  CHECK(again->state == inbox_state::first);
}

TEST_CASE("sqlite: a sweeper claims the sends of a store whose lease ended or that were released, "
          "each once, and never a live store's") {
  bus::test::scratch_directory dir;
  auto path = dir.file("bus.db");
  auto a = open_store(path); // two processes on one file
  auto b = open_store(path);
  REQUIRE(a->renew_lease(now + 10s));
  REQUIRE(b->renew_lease(now + 1h));
  auto store_sends = [&](bus::sqlite_store& s, const std::string& id,
                         std::vector<std::string> rows) {
    auto e = s.receive({"billing", id}, now);
    REQUIRE(e);
    REQUIRE(e->transaction->commit(rows));
  };
  store_sends(*a, "m-1", {"a1", "a2"});
  store_sends(*a, "m-2", {"x"});
  REQUIRE(a->release({"billing", "m-2"}));
  store_sends(*b, "m-3", {"b1"});

  auto claimed = b->claim_orphans(now, 10); // a is alive: only what it gave up
  REQUIRE(claimed);
  REQUIRE(claimed->size() == 1);
  CHECK((*claimed)[0].key.message_id == "m-2");
  CHECK((*claimed)[0].stored == std::vector<std::string>{"x"});

  auto later = b->claim_orphans(now + 20s, 10); // a's lease has ended
  REQUIRE(later);
  REQUIRE(later->size() == 1);
  CHECK((*later)[0].key == bus::inbox_key{"billing", "m-1"});
  CHECK((*later)[0].stored == std::vector<std::string>{"a1", "a2"});

  CHECK(b->claim_orphans(now + 20s, 10)->empty()); // b's own now, and b lives
  CHECK(a->claim_orphans(now + 20s, 10)->empty()); // b's lease holds, m-3 is b's
  CHECK(a->claim_orphans(now + 2h, 10)->size() == 3); // b is gone too: everything
}
