// The database goes away mid-run (issue 21): a bus on real threads whose
// endpoints keep their outbox in PostgreSQL, a server of the test's own
// crashed (pg_ctl -m immediate) while messages flow, then started again.
// The store's failures reach the policy as bus::store_error; a rule trips
// the database's dependency breaker, which pauses the endpoints; once the
// server is back every message has left its effect once, and every send
// was processed once downstream.
#include <catch2/catch.hpp>

#include <libpq-fe.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdlib>
#include <future>

#include "bus/postgres_store.hpp"
#include "stores/postgres_server.hpp"
#include "support/eventually.hpp"
#include "support/handler_gate.hpp"
#include "support/real_threads_bus.hpp"
#include "support/tcp_relay.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;
using bus::test::invoice_requested;

namespace {

// A handler's own statement through the attempt's connection; a failure is
// the handler's exception, as a user's data layer would raise it.
void write(bus::handler_context& ctx, const std::string& sql) {
  PGconn* conn = ctx.transaction<bus::postgres_transaction>().connection();
  PGresult* r = PQexec(conn, sql.c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (!ok)
    throw bus::store_error(std::string("the handler's INSERT failed: ") + PQerrorMessage(conn));
}

// An outbox store on the fixture's server, through a relay the test can
// pause: the server goes silent, its connections stay open. The rig is
// declared first, so that it goes last: the relay's destructor closes its
// connections, which ends any wait in libpq the bus failed to bound, so a
// failing test still ends.
struct store_behind_relay {
  bus::test::real_threads_bus rig;
  bus::test::postgres_server server;
  std::string database = server.fresh_database();
  bus::test::tcp_relay relay{bus::test::tcp_relay::unix_socket{server.socket_path()}};
  std::shared_ptr<bus::message_store> store = open();

  std::shared_ptr<bus::message_store> open() const {
    bus::postgres_store_settings settings{
      database + " host=127.0.0.1 port=" + std::to_string(relay.port()), 200ms, 2s};
    settings.response_timeout = 1s;
    auto opened = bus::postgres_store::open(settings);
    REQUIRE(opened);
    return *opened;
  }

  // Whether stop() returns within `bound`; lets the relay go on after it,
  // so that a stop that did not return ends too.
  bool stops_within(bus::message_bus& bus, std::chrono::milliseconds bound) {
    auto stopping = std::async(std::launch::async, [&] { bus.stop(); });
    bool returned = stopping.wait_for(bound) == std::future_status::ready;
    relay.resume();
    stopping.wait();
    return returned;
  }
};

} // namespace

TEST_CASE("outbox: PostgreSQL crashing mid-run trips the database's breaker, and once it is back "
          "every effect is there once") {
  bus::test::postgres_server server(bus::test::postgres_server::own_t{});
  auto conninfo = server.fresh_database();
  bus::test::pg_reader(conninfo).exec(
    "CREATE TABLE orders (id TEXT NOT NULL); CREATE TABLE invoices (id TEXT NOT NULL)");
  auto opened = bus::postgres_store::open({conninfo, 5s, 2s});
  REQUIRE(opened);
  std::shared_ptr<bus::message_store> store = *opened;

  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  if (std::getenv("BUS_TEST_LOG"))
    b.log_sinks({std::make_shared<spdlog::sinks::stderr_sink_mt>()});
  bus::dependency_breaker_settings db_breaker;
  db_breaker.open_wait = 300ms;
  b.dependency("orders-db", db_breaker).add_resilience([](bus::policy_builder& p) {
    // Only trips: a failure while the database is away goes back unharmed.
    p.on<bus::store_error>().trips("orders-db");
    p.on_any().dead_letter();
  });
  // From the 21st attempt on, handlers wait inside their transaction (the
  // row written, the invoice sent) until the server has crashed: the crash
  // certainly falls in the middle of the run, whatever the threads' speed.
  auto gate = std::make_shared<bus::test::handler_gate>();
  auto attempts = std::make_shared<std::atomic<int>>(0);
  b.endpoint("orders", [&](bus::endpoint_builder& e) {
    e.slots(4).outbox(store).handle<order_placed>([gate, attempts](const order_placed& m,
                                                                   bus::handler_context& ctx) {
      write(ctx, "INSERT INTO orders VALUES ('" + m.order_id + "')");
      if (auto sent = ctx.send("invoices", invoice_requested{m.order_id, {}}); !sent)
        throw std::runtime_error(to_string(sent.error()));
      if (attempts->fetch_add(1) >= 20 && !gate->pass())
        throw std::runtime_error("the test never opened the gate");
    });
  });
  b.endpoint("invoices", [&](bus::endpoint_builder& e) {
    e.slots(4).outbox(store).handle<invoice_requested>([](const invoice_requested& m,
                                                          bus::handler_context& ctx) {
      write(ctx, "INSERT INTO invoices VALUES ('" + m.order_id + "')");
    });
  });
  auto bus = rig.build(b);
  // Whatever fails below, the gate opens before the bus goes: no handler
  // waits out its deadline at every message left.
  struct open_at_exit {
    std::shared_ptr<bus::test::handler_gate> gate;
    ~open_at_exit() { gate->open(); }
  } opener{gate};
  REQUIRE(bus->start());

  constexpr int messages = 300;
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus->send("orders", order_placed{"o-" + std::to_string(i), 1}));
  // Crash while they flow: 20 handled, 4 inside their transaction, the
  // rest waiting on the queue.
  INFO("attempts " << attempts->load() << ", handled " << bus->stats("orders")->handled
                    << ", inside " << gate->inside());
  REQUIRE(gate->wait_inside(4));
  server.crash();
  gate->open();
  CHECK(bus->stats("orders")->handled == 20);
  // The store's failures trip the breaker: the endpoints pause, nothing
  // goes to an error queue.
  REQUIRE(bus::test::eventually(
    [&] { return bus->stats("orders")->dependency_pauses >= 1; }, 30s));
  // The four caught inside fail at their commit (the invoices endpoint's
  // failures may have tripped the breaker first).
  CHECK(bus::test::eventually([&] { return bus->stats("orders")->failed_attempts >= 4; }, 30s));

  server.resume();
  // Done when every effect is in and nothing is left to deliver. (The
  // counters cannot say it: a message whose mark failed as the server went
  // ended requeued, and its copy counts as a duplicate.)
  bus::test::pg_reader db(conninfo);
  auto count = [&](const char* sql) { return db.number(sql); };
  auto all_done = [&] {
    for (const char* queue : {"orders", "invoices"})
      if (rig.transport->depth(queue) != 0 || rig.transport->unacked(queue) != 0)
        return false;
    return count("SELECT count(*) FROM invoices") >= messages
           && count("SELECT count(*) FROM bus_outbox") == 0;
  };
  bool done = bus::test::eventually(all_done, 60s);
  for (const char* endpoint : {"orders", "invoices"}) {
    auto s = *bus->stats(endpoint);
    INFO(endpoint << ": received " << s.received << ", handled " << s.handled << ", duplicates "
                  << s.duplicates << ", failed attempts " << s.failed_attempts << ", held back "
                  << s.held_back << ", pauses " << s.dependency_pauses << ", probes " << s.probes
                  << ", requeued " << s.requeued << ", queue " << rig.transport->depth(endpoint)
                  << ", unacked " << rig.transport->unacked(endpoint));
    CHECK(done);
  }
  bus->stop();

  CHECK(db.number("SELECT count(*) FROM orders") == messages);
  CHECK(db.number("SELECT count(DISTINCT id) FROM orders") == messages);
  CHECK(db.number("SELECT count(*) FROM invoices") == messages);
  CHECK(db.number("SELECT count(DISTINCT id) FROM invoices") == messages);
  CHECK(db.number("SELECT count(*) FROM bus_outbox") == 0);
  CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
  CHECK(rig.transport->depth("orders_error") == 0);
  CHECK(rig.transport->depth("invoices_error") == 0);
}

TEST_CASE("outbox, stop() hangs on a silent PostgreSQL: an attempt fails within the store's "
          "response timeout, and stop() returns within the drain timeout and the store's "
          "deadlines, the message back on its queue") {
  store_behind_relay f;
  auto b = f.rig.builder();
  if (std::getenv("BUS_TEST_LOG"))
    b.log_sinks({std::make_shared<spdlog::sinks::stderr_sink_mt>()});
  b.add_resilience([](bus::policy_builder& p) {
    p.on_any().retry(1000, 100ms, bus::backoff::constant).jitter(false);
  });
  b.endpoint("orders", [&](bus::endpoint_builder& e) {
    e.slots(1).drain_timeout(1s).outbox(f.store).handle<order_placed>(
      [](const order_placed&, bus::handler_context&) {});
  });
  auto bus = f.rig.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus->send("orders", order_placed{"o-1", 1}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("orders")->handled == 1; }, 30s));

  f.relay.pause(); // the server goes silent
  REQUIRE(bus->send("orders", order_placed{"o-2", 1}));
  CHECK(bus::test::eventually([&] { return bus->stats("orders")->failed_attempts >= 1; }, 10s));
  // The bound: the drain timeout, then the store call a consumer or the
  // sweeper is in (a statement's 1 s, or a new connection's 2 s), and a
  // loaded machine's slack.
  CHECK(f.stops_within(*bus, 1s + 2s + 4s));
  CHECK(bus->stats("orders")->handled == 1);
  CHECK(f.rig.transport->depth("orders") == 1); // o-2, for the next run
}

TEST_CASE("outbox, stop() hangs behind a handler's statement: on a silent PostgreSQL the "
          "drain timeout ends the attempt's connection, the statement fails, and stop() returns") {
  store_behind_relay f;
  bus::test::pg_reader(f.database).exec("CREATE TABLE orders (id TEXT NOT NULL)");
  auto b = f.rig.builder();
  b.endpoint("orders", [&](bus::endpoint_builder& e) {
    e.slots(1).drain_timeout(1s).outbox(f.store).handle<order_placed>(
      [&](const order_placed& m, bus::handler_context& ctx) {
        if (m.order_id == "o-2")
          f.relay.pause(); // silent from here: the handler's own statement waits
        write(ctx, "INSERT INTO orders VALUES ('" + m.order_id + "')");
      });
  });
  auto bus = f.rig.build(b);
  REQUIRE(bus->start());
  REQUIRE(bus->send("orders", order_placed{"o-1", 1}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("orders")->handled == 1; }, 30s));
  REQUIRE(bus->send("orders", order_placed{"o-2", 1}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("orders")->in_flight == 1; }, 10s));

  // libpq's blocking call has no deadline of its own, and TCP sees the
  // relay answer: only the stop's interrupter ends it.
  CHECK(f.stops_within(*bus, 1s + 4s));
  CHECK(bus->stats("orders")->handled == 1);
  CHECK(f.rig.transport->depth("orders") == 1); // o-2, given back at the drain timeout
}
