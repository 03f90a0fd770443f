// The outbox on SQLite (docs/outbox.md) in a topology: billing and
// shipping each keep a database of their own, and each handler writes its
// rows through the transaction the bus opened for the attempt, so its
// rows, the message's inbox record and its sends commit together or not
// at all.
//
// 40 orders go to billing, which INSERTs an invoice and sends
// invoice_created to shipping, which INSERTs a shipment. What the outbox
// is for, shown on purpose:
// - every 4th order's first billing attempt fails after its INSERT and
//   its send: both are rolled back, and the retry does them again;
// - every 6th invoice's first shipping attempt fails after its INSERT;
// - every 5th order is delivered twice under one message id, as a broker
//   delivers again a message whose acknowledgement was lost: the copy
//   finds the inbox record and the handler does not run again. (Sends go
//   out at least once: a copy that arrives between billing's commit and
//   its mark sends the stored invoice_created again, so shipping has an
//   inbox too, and handles it once.)
//
// At the end it reads the tables back: one invoice and one shipment per
// order, none twice. Exit code 0 if so; 1 if not, or if the topology did
// not settle in time; 2 if a database cannot be opened.
//
//   build/bin/outbox_orders [DIR]   billing.db and shipping.db in DIR
//                                   (./outbox_orders by default), made anew
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <sqlite3.h>

#include "bus/bus.hpp"
#include "bus/in_memory_transport.hpp"
#include "bus/sqlite_store.hpp"
#include "order_messages.hpp"

using namespace std::chrono_literals;
using samples::order_placed;

namespace samples {

// An event: billing has invoiced an order.
struct invoice_created {
  std::string order_id;
  std::int64_t invoice_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(invoice_created, order_id, invoice_id)

// What the database says when two transactions collide; it clears on a
// retry. (Named outside an anonymous namespace: the bus's log lines name
// the exception's type.)
class deadlock : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace samples

using samples::deadlock;
using samples::invoice_created;

namespace {

constexpr int order_count = 40;

void bind_value(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.c_str(), -1, SQLITE_TRANSIENT);
}
void bind_value(sqlite3_stmt* s, int i, double v) { sqlite3_bind_double(s, i, v); }
void bind_value(sqlite3_stmt* s, int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }

// Runs `sql` on the attempt's connection with `values` bound to ?1, ?2...
// A failure throws, and so fails the attempt.
template <class... Values>
void execute(sqlite3* db, const char* sql, const Values&... values) {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &statement, nullptr);
  if (rc == SQLITE_OK) {
    int i = 0;
    (bind_value(statement, ++i, values), ...);
    rc = sqlite3_step(statement);
  }
  sqlite3_finalize(statement);
  if (rc != SQLITE_DONE)
    throw std::runtime_error(std::string(sql) + ": " + sqlite3_errmsg(db));
}

// "order-12" -> 12: which orders the sample makes fail or deliver twice.
int number_of(const std::string& order_id) {
  return std::stoi(order_id.substr(order_id.find('-') + 1));
}

// The first attempt for each key fails, the others go on: a deadlock that
// clears on its own. Handlers call it from several threads.
class fails_once {
public:
  void maybe_fail(const std::string& key, const char* what) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (failed_.insert(key).second)
      throw deadlock(std::string(what) + " of " + key + ": deadlock, rolled back");
  }

private:
  std::mutex mutex_;
  std::set<std::string> failed_;
};

// A fresh database file with the bus's tables (the store creates them)
// and `schema`, the service's own.
std::shared_ptr<bus::sqlite_store> open_database(const std::filesystem::path& file,
                                                 const char* schema) {
  for (const char* suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(file.string() + suffix);
  auto store = bus::sqlite_store::open({file.string()});
  if (!store) {
    std::cerr << store.error().message << "\n";
    return nullptr;
  }
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(file.c_str(), &db) == SQLITE_OK
            && sqlite3_exec(db, schema, nullptr, nullptr, nullptr) == SQLITE_OK;
  if (!ok)
    std::cerr << file << ": " << sqlite3_errmsg(db) << "\n";
  sqlite3_close(db);
  return ok ? *store : nullptr;
}

struct table_count {
  long long rows = -1;
  long long distinct_orders = -1;
};

// What `table` holds, read back after the run as any other program would.
table_count count_rows(const std::filesystem::path& file, const std::string& table) {
  table_count out;
  sqlite3* db = nullptr;
  sqlite3_stmt* statement = nullptr;
  auto sql = "SELECT count(*), count(DISTINCT order_id) FROM " + table;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK
      && sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK
      && sqlite3_step(statement) == SQLITE_ROW) {
    out.rows = sqlite3_column_int64(statement, 0);
    out.distinct_orders = sqlite3_column_int64(statement, 1);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = argc > 1 ? argv[1] : "outbox_orders";
  std::filesystem::create_directories(dir);
  auto billing_db = open_database(dir / "billing.db",
                                  "CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, "
                                  "order_id TEXT NOT NULL, amount REAL NOT NULL)");
  auto shipping_db = open_database(dir / "shipping.db",
                                   "CREATE TABLE shipments (order_id TEXT NOT NULL, "
                                   "invoice_id INTEGER NOT NULL)");
  if (!billing_db || !shipping_db)
    return 2;

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  // Its handlers wait on their databases: CAF's sharing scheduler leaves
  // them the CPU that idle work-stealing workers would spend polling
  // (README, "Threads: who runs what").
  cfg.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system sys{cfg};
  auto transport = std::make_shared<bus::in_memory_transport>();
  fails_once billing_failures;
  fails_once shipping_failures;
  std::mutex events_mutex;
  std::condition_variable events;

  bus::bus_builder builder{sys};
  builder.name("outbox-orders")
    .transport(transport)
    .observe([&](const bus::bus_event&) { events.notify_all(); })
    .message<order_placed>("order_placed")
    .message<invoice_created>("invoice_created")
    .add_resilience([](bus::policy_builder& p) { p.on_any().retry(3, 10ms); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(2).outbox(billing_db).handle<order_placed>(
        [&](const order_placed& m, bus::handler_context& ctx) {
          sqlite3* db = ctx.transaction<bus::sqlite_transaction>().connection();
          execute(db, "INSERT INTO invoices (order_id, amount) VALUES (?1, ?2)", m.order_id,
                  m.amount);
          auto invoice = invoice_created{m.order_id, sqlite3_last_insert_rowid(db)};
          if (auto sent = ctx.send("shipping", invoice); !sent)
            throw std::runtime_error(to_string(sent.error()));
          // After both: a failure here must undo the row and the send.
          if (number_of(m.order_id) % 4 == 0)
            billing_failures.maybe_fail(m.order_id, "invoice");
        });
    })
    .endpoint("shipping", [&](bus::endpoint_builder& e) {
      e.slots(2).outbox(shipping_db).handle<invoice_created>(
        [&](const invoice_created& m, bus::handler_context& ctx) {
          sqlite3* db = ctx.transaction<bus::sqlite_transaction>().connection();
          execute(db, "INSERT INTO shipments (order_id, invoice_id) VALUES (?1, ?2)", m.order_id,
                  m.invoice_id);
          if (number_of(m.order_id) % 6 == 0)
            shipping_failures.maybe_fail(m.order_id, "shipment");
        });
    });

  auto built = builder.build();
  if (!built) {
    std::cerr << "bad configuration:\n" << built.error().message << "\n";
    return 2;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::cerr << "cannot start: " << to_string(started.error()) << "\n";
    return 1;
  }

  int deliveries = 0;
  for (int i = 1; i <= order_count; ++i) {
    order_placed order{"order-" + std::to_string(i), "customer-" + std::to_string(i % 7),
                       10.0 * i};
    auto id = bus.send("billing", order);
    ++deliveries;
    if (id && i % 5 == 0) {
      bus::send_options again;
      again.message_id = *id; // the same message, delivered once more
      id = bus.send("billing", order, again);
      ++deliveries;
    }
    if (!id) {
      std::cerr << "cannot send: " << to_string(id.error()) << "\n";
      return 1;
    }
  }

  // Settled: every delivery to billing has ended (so every invoice it
  // sends is out), and shipping has nothing waiting or in hand. Checked at
  // each event, and every 20 ms for a settlement no event announces.
  auto settled = [&] {
    auto b = *bus.stats("billing");
    return static_cast<int>(b.handled + b.dead_lettered) == deliveries
           && transport->depth("shipping") == 0 && transport->unacked("shipping") == 0;
  };
  bool done = false;
  {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    std::unique_lock<std::mutex> lock(events_mutex);
    while (!(done = settled()) && std::chrono::steady_clock::now() < deadline)
      events.wait_for(lock, 20ms);
  }
  bus.stop();

  std::printf("%-9s %9s %8s %14s %10s %13s\n", "endpoint", "received", "handled",
              "rolled back", "duplicates", "to error");
  for (const char* name : {"billing", "shipping"}) {
    auto s = *bus.stats(name);
    std::printf("%-9s %9llu %8llu %14llu %10llu %13llu\n", name,
                static_cast<unsigned long long>(s.received),
                static_cast<unsigned long long>(s.handled),
                static_cast<unsigned long long>(s.failed_attempts),
                static_cast<unsigned long long>(s.duplicates),
                static_cast<unsigned long long>(s.dead_lettered));
  }

  // The guarantee, read from the databases: each order's effects once.
  auto invoices = count_rows(dir / "billing.db", "invoices");
  auto shipments = count_rows(dir / "shipping.db", "shipments");
  auto once = [](const table_count& t) {
    return t.rows == order_count && t.distinct_orders == order_count;
  };
  std::printf("\n%d orders, %d deliveries to billing\n", order_count, deliveries);
  std::printf("%-30s %3lld rows for %3lld orders: %s\n", "billing.db invoices", invoices.rows,
              invoices.distinct_orders, once(invoices) ? "one each" : "WRONG");
  std::printf("%-30s %3lld rows for %3lld orders: %s\n", "shipping.db shipments", shipments.rows,
              shipments.distinct_orders, once(shipments) ? "one each" : "WRONG");
  if (!done)
    std::printf("the topology did NOT settle within 30 s\n");
  std::printf("(the files stay in %s)\n", dir.string().c_str());
  return done && once(invoices) && once(shipments) ? 0 : 1;
}
