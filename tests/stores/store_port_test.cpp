// The store port against a real database (issue 21): the inbox record,
// the handler's transaction, the stored sends and their mark, the lease,
// the claim and the cleanup. Compiled once per adapter (BUS_TEST_POSTGRES
// picks PostgreSQL on the fixture's server, else SQLite on a file), so
// that both keep one contract.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#ifdef BUS_TEST_POSTGRES
#include "stores/postgres_backend.hpp"
#else
#include "stores/sqlite_backend.hpp"
#endif

using namespace std::chrono_literals;
using bus::inbox_state;
using bus::test::store_backend;

namespace {

const bus::time_point now = bus::from_unix_ms(1'700'000'000'000);

// The handler's own table and row, written through its transaction.
void write_order(bus::store_transaction& t, const std::string& id) {
  store_backend::handler_exec(t, store_backend::orders_table);
  store_backend::handler_exec(t, "INSERT INTO orders VALUES ('" + id + "')");
}

} // namespace

TEST_CASE(BUS_STORE_NAME ": a handled message's writes and sends commit together, then its copies are "
          "recognised") {
  store_backend b;
  auto store = b.open();
  bus::inbox_key key{"billing", "m-1"};

  auto first = store->receive(key, now);
  REQUIRE(first);
  CHECK(first->state == inbox_state::first);
  write_order(*first->transaction, "o-1");
  REQUIRE(first->transaction->commit({"send one", "send two"}));

  const auto& r = b.db();
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

TEST_CASE(BUS_STORE_NAME ": a rolled back attempt leaves nothing, its inbox record included") {
  store_backend b;
  auto store = b.open();
  const auto& r = b.db();
  r.exec(store_backend::orders_table);
  bus::inbox_key key{"billing", "m-1"};

  SECTION("rolled back") {
    auto e = store->receive(key, now);
    REQUIRE(e);
    write_order(*e->transaction, "o-1");
    e->transaction->rollback();
    e->transaction->rollback(); // twice is harmless
  }
  SECTION("dropped unfinished, as a consumer that died") {
    auto e = store->receive(key, now);
    REQUIRE(e);
    write_order(*e->transaction, "o-1");
  }
  CHECK(r.number("SELECT count(*) FROM orders") == 0);
  CHECK(r.number("SELECT count(*) FROM bus_inbox") == 0);
  auto again = store->receive(key, now);
  REQUIRE(again);
  CHECK(again->state == inbox_state::first);
}

TEST_CASE(BUS_STORE_NAME ": an attempt that sends nothing is done at its commit") {
  store_backend b;
  auto store = b.open();
  auto e = store->receive({"billing", "m-1"}, now);
  REQUIRE(e);
  REQUIRE(e->transaction->commit({}));
  auto copy = store->receive({"billing", "m-1"}, now);
  REQUIRE(copy);
  CHECK(copy->state == inbox_state::dispatched);
}

TEST_CASE(BUS_STORE_NAME ": a handler that commits its transaction itself fails its attempt, and the retry "
          "runs it again") {
  store_backend b;
  auto store = b.open();
  bus::inbox_key key{"billing", "m-1"};
  auto e = store->receive(key, now);
  REQUIRE(e);
  store_backend::handler_exec(*e->transaction, "COMMIT");
  auto committed = e->transaction->commit({"a send"});
  REQUIRE_FALSE(committed);
  CHECK(committed.error().code == bus::errc::store_failure);
  CHECK_THAT(committed.error().message, Catch::Contains("ended the transaction itself"));
  auto retry = store->receive(key, now);
  REQUIRE(retry);
  CHECK(retry->state == inbox_state::first);
}

TEST_CASE(BUS_STORE_NAME ": a second copy of a message waits for the first's transaction, then sees it "
          "handled") {
  store_backend b;
  auto store = b.open();
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

TEST_CASE(BUS_STORE_NAME ": a database locked past the lock timeout fails the attempt with a "
                         "store failure") {
  store_backend b;
  auto store = b.open(20ms);
  const auto& other = b.db();
  other.exec(store_backend::hold_lock);
  auto e = store->receive({"billing", "m-1"}, now);
  REQUIRE_FALSE(e);
  CHECK(e.error().code == bus::errc::store_failure);
  CHECK_THAT(e.error().message,
             Catch::Contains(b.location()) && Catch::Contains(store_backend::lock_word));
  other.exec(store_backend::let_go);
  auto later = store->receive({"billing", "m-1"}, now);
  REQUIRE(later);
  CHECK(later->state == inbox_state::first);
}

TEST_CASE(BUS_STORE_NAME ": a cleanup deletes an endpoint's records dispatched before the cut, a batch at a "
          "time, and never a record whose sends are not out") {
  store_backend b;
  auto store = b.open();
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
  const auto& r = b.db();
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'billing'") == 2);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE message_id = 'waiting'") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_outbox WHERE message_id = 'waiting'") == 1);
  CHECK(r.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'shipping'") == 1);
  // A cleaned message is new again.
  auto again = store->receive({"billing", "old-0"}, now + 3h);
  REQUIRE(again);
  CHECK(again->state == inbox_state::first);
}

TEST_CASE(BUS_STORE_NAME ": a sweeper claims the sends of a store whose lease ended or that were released, "
          "each once, and never a live store's") {
  store_backend backend;
  auto a = backend.open(); // two processes on one database
  auto b = backend.open();
  REQUIRE(a->renew_lease(now + 10s));
  REQUIRE(b->renew_lease(now + 1h));
  auto store_sends = [&](bus::message_store& s, const std::string& id,
                         std::vector<std::string> rows) {
    auto e = s.receive({"billing", id}, now);
    REQUIRE(e);
    REQUIRE(e->transaction->commit(rows));
  };
  store_sends(*a, "m-1", {"a1", "a2"});
  store_sends(*a, "m-2", {"x"});
  REQUIRE(a->release({"billing", "m-2"}));
  store_sends(*b, "m-3", {"b1"});

  auto claimed = b->claim_orphans("billing", now, 10); // a is alive: only what it gave up
  REQUIRE(claimed);
  REQUIRE(claimed->size() == 1);
  CHECK((*claimed)[0].key.message_id == "m-2");
  CHECK((*claimed)[0].stored == std::vector<std::string>{"x"});

  auto later = b->claim_orphans("billing", now + 20s, 10); // a's lease has ended
  REQUIRE(later);
  REQUIRE(later->size() == 1);
  CHECK((*later)[0].key == bus::inbox_key{"billing", "m-1"});
  CHECK((*later)[0].stored == std::vector<std::string>{"a1", "a2"});

  CHECK(b->claim_orphans("billing", now + 20s, 10)->empty()); // b's own now, and b lives
  CHECK(a->claim_orphans("billing", now + 20s, 10)->empty()); // b's lease holds, m-3 is b's
  CHECK(a->claim_orphans("billing", now + 2h, 10)->size() == 3); // b is gone too: everything
}

TEST_CASE(BUS_STORE_NAME ": a sweeper claims only its own endpoint's orphans: another endpoint's "
          "on the same database wait for that endpoint's sweeper") {
  store_backend backend;
  auto gone = backend.open();
  REQUIRE(gone->renew_lease(now + 10s));
  for (const char* endpoint : {"billing", "shipping"}) {
    auto e = gone->receive({endpoint, "m-1"}, now);
    REQUIRE(e);
    REQUIRE(e->transaction->commit({std::string("send of ") + endpoint}));
  }
  auto sweeper = backend.open();
  auto billing = sweeper->claim_orphans("billing", now + 1h, 10);
  REQUIRE(billing);
  REQUIRE(billing->size() == 1);
  CHECK((*billing)[0].key == bus::inbox_key{"billing", "m-1"});
  auto shipping = sweeper->claim_orphans("shipping", now + 1h, 10);
  REQUIRE(shipping);
  REQUIRE(shipping->size() == 1);
  CHECK((*shipping)[0].stored == std::vector<std::string>{"send of shipping"});
}

TEST_CASE(BUS_STORE_NAME ": a message id cut at a NUL byte: ids of any bytes and length are each "
          "a record of their own, found again, and their sends are swept") {
  store_backend b;
  auto store = b.open();
  REQUIRE(store->renew_lease(now + 10s));
  using namespace std::string_literals;
  const std::vector<std::string> ids{"p13\0first"s, "p13\0second"s, "p13"s,
                                     std::string(10'000, 'x'), std::string(10'000, 'x') + "y",
                                     "caf\xc3"s /* cut UTF-8 */, "caf\xc3\xa9"s};
  auto send_of = [&](std::size_t i) { return "send " + std::to_string(i); };
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto e = store->receive({"billing", ids[i]}, now);
    REQUIRE(e);
    INFO("id " << i << ", of " << ids[i].size() << " bytes");
    REQUIRE(e->state == inbox_state::first); // not taken for another id's copy
    REQUIRE(e->transaction->commit({send_of(i)}));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto again = store->receive({"billing", ids[i]}, now);
    REQUIRE(again);
    CHECK(again->state == inbox_state::stored);
    CHECK(again->stored == std::vector<std::string>{send_of(i)});
  }
  // Another process claims them once this one is gone, under the keys it
  // marks them with.
  auto other = b.open();
  auto claimed = other->claim_orphans("billing", now + 2h, 100);
  REQUIRE(claimed);
  REQUIRE(claimed->size() == ids.size());
  for (const auto& o : *claimed)
    REQUIRE(other->mark_dispatched(o.key, now));
  for (const auto& id : ids) {
    auto done = store->receive({"billing", id}, now);
    REQUIRE(done);
    CHECK(done->state == inbox_state::dispatched);
  }
}

TEST_CASE(BUS_STORE_NAME ": tables a later bus wrote are refused when the store opens") {
  store_backend b;
  (void)b.open();
  b.db().exec("UPDATE bus_store_schema SET version = 2");
  auto store = b.try_open();
  REQUIRE_FALSE(store);
  CHECK(store.error().code == bus::errc::store_failure);
  CHECK_THAT(store.error().message, Catch::Contains("schema version 2"));
}

TEST_CASE(BUS_STORE_NAME ": copies of every message handled at once by two processes leave each "
                         "effect once") {
  store_backend backend;
  auto one = backend.open(); // two processes on one database, two consumers each
  auto other = backend.open();
  constexpr int messages = 30;
  std::atomic<int> handled{0};
  auto consume = [&](bus::message_store& store) {
    for (int i = 0; i < messages; ++i) {
      bus::inbox_key key{"billing", "m-" + std::to_string(i)};
      auto e = store.receive(key, now);
      if (!e)
        throw std::runtime_error(e.error().message);
      if (e->state == inbox_state::first) {
        write_order(*e->transaction, "o-" + std::to_string(i));
        if (auto done = e->transaction->commit({"invoice " + std::to_string(i)}); !done)
          throw std::runtime_error(done.error().message);
        ++handled;
      }
      if (e->state != inbox_state::dispatched)
        if (auto marked = store.mark_dispatched(key, now); !marked)
          throw std::runtime_error(marked.error().message);
    }
  };
  std::vector<std::future<void>> consumers;
  for (auto* store : {one.get(), one.get(), other.get(), other.get()})
    consumers.push_back(std::async(std::launch::async, consume, std::ref(*store)));
  for (auto& c : consumers)
    REQUIRE_NOTHROW(c.get());
  CHECK(handled == messages);
  CHECK(backend.db().number("SELECT count(*) FROM orders") == messages);
  CHECK(backend.db().number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NOT NULL")
        == messages);
  CHECK(backend.db().number("SELECT count(*) FROM bus_outbox") == 0);
}

TEST_CASE(BUS_STORE_NAME ": the backlog counts, per endpoint, the messages whose sends are not all "
                         "out, their sends and the oldest's reception") {
  store_backend b;
  auto store = b.open();
  auto handle = [&](const std::string& endpoint, const std::string& id, bus::time_point at,
                    std::vector<std::string> sends, bool dispatched) {
    auto e = store->receive({endpoint, id}, at);
    REQUIRE(e);
    REQUIRE(e->transaction->commit(sends));
    if (dispatched)
      REQUIRE(store->mark_dispatched({endpoint, id}, at));
  };
  CHECK(store->backlog()->empty());
  handle("billing", "m-1", now + 1s, {"a", "b"}, false);
  handle("billing", "m-2", now, {"c"}, false);
  handle("billing", "m-3", now, {"d"}, true);  // out: not pending
  handle("billing", "m-4", now, {}, false);    // nothing to send: done at its commit
  handle("shipping", "m-1", now + 5s, {"e"}, false);
  auto backlog = store->backlog();
  REQUIRE(backlog);
  REQUIRE(backlog->size() == 2);
  CHECK((*backlog)[0].endpoint == "billing");
  CHECK((*backlog)[0].messages == 2);
  CHECK((*backlog)[0].sends == 3);
  CHECK((*backlog)[0].oldest == now);
  CHECK((*backlog)[1].endpoint == "shipping");
  CHECK((*backlog)[1].messages == 1);
  CHECK((*backlog)[1].sends == 1);
  CHECK((*backlog)[1].oldest == now + 5s);
}

TEST_CASE(BUS_STORE_NAME ": a stream reader's offset is kept per reader and stream, replaced by each "
                         "save, and found again by another opening") {
  store_backend b;
  {
    auto store = b.open();
    auto none = store->stream_offset("projection", "audit");
    REQUIRE(none);
    CHECK_FALSE(*none);
    REQUIRE(store->save_stream_offset("projection", "audit", 41));
    REQUIRE(store->save_stream_offset("projection", "audit", 42));
    REQUIRE(store->save_stream_offset("archive", "audit", 7));
    REQUIRE(store->save_stream_offset("projection", "audit.v2", 0));
  }
  auto again = b.open(); // as a process started again would
  auto offset = [&](const std::string& reader, const std::string& stream) {
    auto kept = again->stream_offset(reader, stream);
    REQUIRE(kept);
    return *kept;
  };
  CHECK(offset("projection", "audit") == std::optional<std::uint64_t>(42));
  CHECK(offset("archive", "audit") == std::optional<std::uint64_t>(7));
  CHECK(offset("projection", "audit.v2") == std::optional<std::uint64_t>(0));
  CHECK_FALSE(offset("archive", "audit.v2"));
  // The largest offset a signed 64-bit column holds goes in and comes out.
  constexpr std::uint64_t largest = 9'223'372'036'854'775'807ULL;
  REQUIRE(again->save_stream_offset("archive", "audit", largest));
  CHECK(offset("archive", "audit") == std::optional<std::uint64_t>(largest));
  auto beyond = again->save_stream_offset("archive", "audit", largest + 1);
  REQUIRE_FALSE(beyond);
  CHECK(beyond.error().code == bus::errc::store_failure);
  CHECK(offset("archive", "audit") == std::optional<std::uint64_t>(largest));
}
