// The outbox and inbox in the runtime (issue 21), on the harness's virtual
// time with a real SQLite file: a handler's rows and sends commit together,
// a copy of a handled message never runs its handler, stored sends that
// did not go out are sent when the message returns, and a failing store is
// a failed attempt for the policy.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sqlite3.h>

#include "bus/sqlite_store.hpp"
#include "bus/testing/harness.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/caf_fixture.hpp"
#include "support/refusing_transport.hpp"
#include "support/sample_messages.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;
using bus::test::reader;

namespace {

bus::send_options with_id(std::string id) {
  bus::send_options o;
  o.message_id = std::move(id);
  return o;
}

// The billing endpoint of the tests: it saves the order in its own table
// and asks for an invoice, in the attempt's transaction. `fail_first`
// attempts throw after both.
struct billing {
  std::shared_ptr<bus::sqlite_store> store;
  std::shared_ptr<int> runs = std::make_shared<int>(0);
  int fail_first = 0;
  std::string error_queue{};                // empty: the default, billing_error
  std::shared_ptr<bus::transport> through{}; // null: the harness's transport

  bus::message_bus& start(bus::testing::harness& h,
                          bus::duration retry_delay = 0ms) {
    auto b = h.builder();
    if (through)
      b.transport(through);
    b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .add_resilience([=](auto& p) {
        p.on_any().retry({retry_delay, retry_delay}).jitter(false).then_redeliver({1min}).jitter(false);
      })
      .endpoint("billing", [&](bus::endpoint_builder& e) {
        if (!error_queue.empty())
          e.error_queue(error_queue);
        e.outbox(store).handle<order_placed>(
          [runs = runs, fail_first = fail_first](const order_placed& m, bus::handler_context& ctx) {
            auto* db = ctx.transaction<bus::sqlite_transaction>().connection();
            auto sql = "INSERT INTO orders VALUES ('" + m.order_id + "')";
            if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
              throw std::runtime_error(sqlite3_errmsg(db));
            REQUIRE(ctx.send("invoices", invoice_requested{m.order_id, {}}));
            if (++*runs <= fail_first)
              throw bus::test::database_down();
          });
      });
    auto& bus = h.start(b);
    REQUIRE(h.transport().declare_queue("invoices"));
    return bus;
  }
};

// A store on a scratch file, and the handler's own table in it.
std::shared_ptr<bus::sqlite_store> open_store(const std::string& path) {
  auto s = bus::sqlite_store::open({path, 20ms});
  REQUIRE(s);
  return *s;
}

// What a process that died right after its commit leaves behind: the
// inbox record of billing's `message_id` and `rows` as its stored sends.
void leave_stored(bus::message_store& store, const std::string& message_id,
                  const std::vector<std::string>& rows) {
  auto e = store.receive({"billing", message_id}, bus::from_unix_ms(0));
  REQUIRE(e);
  REQUIRE(e->transaction->commit(rows));
}

struct billing_db {
  bus::test::scratch_directory dir;
  std::string path = dir.file("billing.db");
  std::shared_ptr<bus::sqlite_store> store = open_store(path);
  reader db{path};

  billing_db() { db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)"); }
};

// What another process on the same file stored and never sent: its store
// object, whose lease ends `lease` from now unless renewed.
std::shared_ptr<bus::sqlite_store> other_process(const billing_db& f, bus::duration lease) {
  auto other = open_store(f.path);
  REQUIRE(other->renew_lease(std::chrono::system_clock::now() + lease));
  return other;
}

std::string stored_invoice(const std::string& message_id) {
  bus::message_registry registry;
  REQUIRE(registry.add<invoice_requested>("invoice_requested"));
  bus::outgoing_message out{"invoices", {}, {}};
  out.message.message_id = message_id;
  out.message.message_type = "invoice_requested";
  out.message.body = *registry.make_body(invoice_requested{"o-1", {}});
  return *bus::encode_outgoing(out);
}

// The billing endpoint started on a fresh file, for tests that only use it.
struct started_billing {
  billing_db f;
  bus::testing::harness h;
  billing endpoint{f.store};
  bus::message_bus& bus = endpoint.start(h);
};

// What the code of a web request does in its session: the order in its
// own table, and the invoice request to send. Returns the send's id.
std::string save_order(bus::outbox_session& session, const std::string& order_id) {
  auto* db = session.transaction<bus::sqlite_transaction>().connection();
  auto sql = "INSERT INTO orders VALUES ('" + order_id + "')";
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  auto id = session.send("invoices", invoice_requested{order_id, {}});
  REQUIRE(id);
  return *id;
}

} // namespace

TEST_CASE("outbox: a handler's row and its send commit together and the send goes out after") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  CHECK(*billing.runs == 1);
  CHECK(f.db.number("SELECT count(*) FROM orders") == 1);
  auto invoices = h.queue("invoices");
  REQUIRE(invoices.size() == 1);
  CHECK(invoices[0]->correlation_id == "m-1"); // what a handler's send carries over
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'billing' AND message_id = "
                    "'m-1' AND dispatched_at IS NOT NULL")
        == 1);
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
  CHECK(h.stats("billing").handled == 1);
}

TEST_CASE("outbox: a copy of a message handled already is acknowledged without its handler") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  CHECK(*billing.runs == 1);
  CHECK(f.db.number("SELECT count(*) FROM orders") == 1);
  CHECK(h.queue("invoices").size() == 1);
  auto s = h.stats("billing");
  CHECK(s.received == 2);
  CHECK(s.handled == 2);
  CHECK(s.duplicates == 1);
  CHECK(s.in_flight == 0);
  CHECK(h.logged("[bus.outbox] [info] message m-1 was handled by endpoint 'billing' already"));
}

TEST_CASE("outbox: a failed attempt leaves neither its row nor its send, and the retry's commit "
          "once") {
  billing_db f;
  bus::testing::harness h;
  billing billing{f.store};
  billing.fail_first = 2;
  auto& bus = billing.start(h, 1s);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  h.advance(1s); // the first retry fails too: still nothing kept
  CHECK(*billing.runs == 2);
  CHECK(f.db.number("SELECT count(*) FROM orders") == 0);
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox") == 0);
  CHECK(h.queue("invoices").empty());
  h.advance(1s);
  CHECK(*billing.runs == 3);
  CHECK(f.db.number("SELECT count(*) FROM orders") == 1);
  CHECK(h.queue("invoices").size() == 1);
  CHECK(h.stats("billing").handled == 1);
}

TEST_CASE("harness: advance_until stops once its condition holds, though an outbox's sweeper "
          "and cleaner keep timers pending for ever") {
  billing_db f;
  bus::testing::harness h;
  billing billing{f.store};
  billing.fail_first = 1;
  auto& bus = billing.start(h, 1s);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  auto passed = h.advance_until([&] { return h.stats("billing").handled == 1; });
  CHECK(passed == 1s); // the retry's delay, not a sweep or a year of them
  CHECK(h.queue("invoices").size() == 1);
  // A condition that never holds ends at the last timer within the limit:
  // sweeps every 10 s, so within 10 s of it.
  auto more = h.advance_until([] { return false; }, 1min);
  CHECK(more <= 1min);
  CHECK(more > 50s);
}

TEST_CASE("outbox: sends stored by an attempt that never got them out go out when the message "
          "returns, without its handler") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  leave_stored(*f.store, "m-1", {stored_invoice("invoice-of-m-1")});
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  CHECK(*billing.runs == 0);
  auto invoices = h.queue("invoices");
  REQUIRE(invoices.size() == 1);
  CHECK(invoices[0]->message_id == "invoice-of-m-1");
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NOT NULL") == 1);
  CHECK(h.stats("billing").handled == 1);
  CHECK(h.stats("billing").duplicates == 1); // a copy of what a crashed process handled
  // And once marked, a further copy is a plain duplicate.
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  CHECK(h.queue("invoices").size() == 1);
  CHECK(h.stats("billing").duplicates == 2);
}

TEST_CASE("outbox: a stored send that no longer reads moves its message to the error queue with "
          "the reason") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  leave_stored(*f.store, "m-1", {"{\"v\":1,\"queue\":"});
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.run();
  CHECK(*billing.runs == 0);
  CHECK(h.queue("invoices").empty());
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  auto why = errors[0]->headers.find("bus-fault-message");
  REQUIRE(why);
  CHECK_THAT(std::string(*why), Catch::Contains("stored outgoing message 1 of 1 cannot be read"));
  // The row stays for an operator to look at.
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 1);
}

TEST_CASE("outbox: a store that fails is a failed attempt for the policy, and the message is "
          "handled once it is back") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  f.db.exec("BEGIN IMMEDIATE"); // another writer holds the file past the busy timeout
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, with_id("m-1")));
  h.advance(1ms); // three attempts fail in the store; a redelivery is scheduled
  CHECK(*billing.runs == 0);
  auto failed = h.events_of(event_kind::failed);
  REQUIRE(failed.size() == 3);
  CHECK(failed[0].exception_type == "bus::store_error");
  CHECK_THAT(failed[0].detail, Catch::Contains("sqlite") && Catch::Contains("locked"));
  CHECK(h.stats("billing").pending_redelivery == 1);
  f.db.exec("ROLLBACK");
  h.advance(1min);
  CHECK(*billing.runs == 1);
  CHECK(h.queue("invoices").size() == 1);
  CHECK(h.stats("billing").handled == 1);
}

TEST_CASE("outbox: an endpoint whose handlers run on CAF's workers cannot have one") {
  billing_db f;
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.outbox(f.store)
      .handler_threads(bus::handler_threads::caf_workers)
      .handle<order_placed>([](const order_placed&) {});
  });
  CHECK_THROWS_WITH(h.start(b), Catch::Contains("endpoint 'billing'")
                                  && Catch::Contains("outbox's database calls block"));
}

TEST_CASE("outbox: inbox records go after their retention, batch by batch, and a copy arriving "
          "later runs its handler again") {
  billing_db f;
  bus::testing::harness h;
  auto runs = std::make_shared<int>(0);
  auto b = h.builder();
  bus::outbox_options options;
  options.retention = 25h; // the default policies retry for 24 h at most
  options.cleanup_interval = 1h;
  options.cleanup_batch = 2;
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.outbox(f.store, options).handle<order_placed>([runs](const order_placed&) { ++*runs; });
  });
  auto& bus = h.start(b);
  for (const auto* id : {"m-1", "m-2", "m-3"})
    REQUIRE(bus.send("billing", order_placed{"o", 1}, with_id(id)));
  h.run();
  h.advance(24h); // hourly cleanups so far: nothing is 25 h old yet
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox") == 3);
  REQUIRE(bus.send("billing", order_placed{"o", 1}, with_id("m-4")));
  h.run();
  h.advance(2h); // 26 h: m-1..3 are past 25 h, m-4 is not
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox") == 1);
  auto s = h.stats("billing");
  CHECK(s.inbox_records_cleaned == 3);
  CHECK(s.inbox_cleanups == 26); // one an hour; the last took two batches
  CHECK(h.logged("deleted 3 inbox record(s) of endpoint 'billing'"));
  // What NServiceBus documents too: past retention a copy is a new message.
  REQUIRE(bus.send("billing", order_placed{"o", 1}, with_id("m-1")));
  REQUIRE(bus.send("billing", order_placed{"o", 1}, with_id("m-4")));
  h.run();
  CHECK(*runs == 5);
  CHECK(h.stats("billing").duplicates == 1);
}

TEST_CASE("outbox: a retention shorter than a handler's longest retry is refused at build, naming "
          "both") {
  billing_db f;
  bus::testing::harness h;
  auto b = h.builder();
  bus::outbox_options options;
  options.retention = 1h;
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.outbox(f.store, options).handle<order_placed>([](const order_placed&) {});
  });
  CHECK_THROWS_WITH(h.start(b), Catch::Contains("its outbox keeps inbox records for "
                                                + bus::to_hms(1h))
                                  && Catch::Contains("handler of 'order_placed' may retry a "
                                                     "message for "
                                                     + bus::to_hms(24h)));
}

TEST_CASE("outbox: the sweeper sends what a dead process stored once its lease ends, and never "
          "what a live one did") {
  billing_db f;
  auto dead = other_process(f, 30s);
  auto alive = other_process(f, 10h);
  leave_stored(*dead, "m-9", {stored_invoice("invoice-of-m-9")});
  leave_stored(*alive, "m-8", {stored_invoice("invoice-of-m-8")});
  bus::testing::harness h;
  billing billing{f.store};
  billing.start(h);
  h.run(); // the first sweep, at once: both leases hold
  CHECK(h.queue("invoices").empty());
  h.advance(40s); // sweeps every 10 s; the dead one's lease ended at 30 s
  auto invoices = h.queue("invoices");
  REQUIRE(invoices.size() == 1);
  CHECK(invoices[0]->message_id == "invoice-of-m-9");
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox WHERE message_id = 'm-9' AND dispatched_at "
                    "IS NOT NULL")
        == 1);
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox WHERE message_id = 'm-8'") == 1);
  CHECK(h.logged("sending 1 message(s) that message m-9 on endpoint 'billing' stored and a "
                 "process that is gone never sent"));
  h.advance(1min); // sent once: the record is marked
  CHECK(h.queue("invoices").size() == 1);
  CHECK(*billing.runs == 0);
}

TEST_CASE("outbox: a stored send the sweeper cannot read goes to its endpoint's error queue with "
          "the reason, and the others go out") {
  billing_db f;
  auto dead = other_process(f, 1s);
  leave_stored(*dead, "m-7", {"not a record", stored_invoice("invoice-of-m-7")});
  bus::testing::harness h;
  billing billing{f.store};
  billing.start(h);
  h.advance(10s);
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_id == "m-7.outbox.1");
  auto why = errors[0]->headers.find("bus-fault-message");
  REQUIRE(why);
  CHECK_THAT(std::string(*why), Catch::Contains("not a JSON object"));
  REQUIRE(h.queue("invoices").size() == 1);
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
}

TEST_CASE("outbox, a stored send deleted without trace: an unreadable one goes to the endpoint's "
          "own error queue, and its record stays stored until that queue has it") {
  billing_db f;
  auto dead = other_process(f, 1s);
  leave_stored(*dead, "m-6", {"{\"version\": 99}", stored_invoice("invoice-of-m-6")});
  bus::testing::harness h;
  REQUIRE(h.transport().declare_queue("billing_failures"));
  auto refusing = std::make_shared<bus::test::refusing_transport>(h.transport(), "billing_failures",
                                                                  1 << 20);
  refusing->out_of_reach = 1; // the first sweep's send to the error queue is refused
  billing billing{f.store};
  billing.error_queue = "billing_failures";
  billing.through = refusing;
  billing.start(h);
  h.advance(10s); // the sweep that claims the record: the error queue refuses
  CHECK(refusing->refused == 1);
  CHECK(h.queue("billing_failures").empty());
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox WHERE message_id = 'm-6'") == 2);
  h.advance(10s); // the next sweep: the error queue takes it
  auto kept = h.queue("billing_failures");
  REQUIRE(kept.size() == 1);
  CHECK(kept[0]->message_id == "m-6.outbox.1");
  CHECK(*kept[0]->body.to_json_text() == "{\"version\": 99}");
  CHECK(h.queue("billing_error").empty());
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
  CHECK(h.queue("invoices").size() >= 1); // at least once: again after the refusal
}

TEST_CASE("outbox, a lease kept from open(): start() itself shortens the store's lease to three "
          "sweep intervals, so a process killed before its sweeper's first turn leaves its sends "
          "to another's sweep that soon, not a minute after open()") {
  billing_db f;
  bus::test::caf_fixture process; // on the test coordinator: nothing runs unless driven
  auto b = process.builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.outbox(f.store).handle<order_placed>([](const order_placed&, bus::handler_context&) {});
  });
  auto built = b.build();
  REQUIRE(built);
  auto started_at = std::chrono::system_clock::now();
  REQUIRE((*built)->start()); // and killed here: no actor of it has run
  auto expires = bus::from_unix_ms(f.db.number("SELECT max(expires_at) FROM bus_store_owners"));
  CHECK(expires <= started_at + 3 * 10s + 2s); // three sweep intervals of 10 s, and slack
  CHECK(expires >= started_at + 3 * 10s - 2s);
}

TEST_CASE("outbox session: the caller's row and its sends commit together, then go out") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  auto session = bus.outbox_session(f.store);
  REQUIRE(session);
  auto id = save_order(*session, "o-1");
  CHECK(h.queue("invoices").empty()); // nothing before the commit
  REQUIRE(session->commit());
  CHECK(f.db.number("SELECT count(*) FROM orders") == 1);
  auto invoices = h.queue("invoices");
  REQUIRE(invoices.size() == 1);
  CHECK(invoices[0]->message_id == id);
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox WHERE endpoint = 'billing' AND dispatched_at "
                    "IS NOT NULL")
        == 1);
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
}

TEST_CASE("outbox session: one not committed leaves nothing") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  {
    auto session = bus.outbox_session(f.store);
    REQUIRE(session);
    save_order(*session, "o-1");
  }
  CHECK(f.db.number("SELECT count(*) FROM orders") == 0);
  CHECK(f.db.number("SELECT count(*) FROM bus_inbox") == 0);
  h.advance(1min);
  CHECK(h.queue("invoices").empty());
}

TEST_CASE("outbox session: a send refused after the commit is the sweeper's, and goes out once it "
          "can") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  auto session = bus.outbox_session(f.store);
  REQUIRE(session);
  REQUIRE(session->send("audit", invoice_requested{"o-1", {}})); // no such queue yet
  REQUIRE(session->commit());
  CHECK(h.logged("committed, but a send failed"));
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 1);
  REQUIRE(h.transport().declare_queue("audit"));
  h.advance(10s); // the next sweep
  CHECK(h.queue("audit").size() == 1);
  CHECK(f.db.number("SELECT count(*) FROM bus_outbox") == 0);
}

TEST_CASE("outbox session: a store that is no endpoint's outbox is refused") {
  started_billing rig;
  auto& [f, h, billing, bus] = rig;
  auto session = bus.outbox_session(open_store(f.dir.file("other.db")));
  REQUIRE_FALSE(session);
  CHECK(session.error().code == bus::errc::invalid_configuration);
}

TEST_CASE("outbox: a stream endpoint with a store keeps its offset there, not in a file, and "
          "resumes from it") {
  billing_db f;
  bus::testing::harness h;
  std::vector<std::string> seen;
  // Starts the projection, then appends o-<from> .. o-<to - 1> and runs.
  auto run_projection = [&](int from, int to) {
    auto b = h.builder();
    b.message<order_placed>("order_placed")
      .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
        e.outbox(f.store).start_from(bus::stream_start::first())
          .handle<order_placed>([&seen](const order_placed& m) { seen.push_back(m.order_id); });
      });
    h.start(b);
    for (int i = from; i < to; ++i)
      REQUIRE(h.bus().send("audit", order_placed{"o-" + std::to_string(i), 1}));
    h.run();
  };
  run_projection(0, 3);
  h.stop();
  CHECK(f.db.number("SELECT committed FROM bus_stream_offsets WHERE reader = 'projection' AND "
                    "stream = 'audit'")
        == 2);
  CHECK((!std::filesystem::exists(h.stream_offset_directory())
         || std::filesystem::is_empty(h.stream_offset_directory())));

  run_projection(3, 5);
  // The inbox would keep o-0 to o-2 from running twice anyway; the log
  // line says the reader did not read them again.
  CHECK(seen == std::vector<std::string>{"o-0", "o-1", "o-2", "o-3", "o-4"});
  CHECK(h.logged("endpoint 'projection' resumes reading the stream 'audit' after offset 2 (the "
                 "sqlite store)"));
  CHECK(f.db.number("SELECT committed FROM bus_stream_offsets") == 4);
}
