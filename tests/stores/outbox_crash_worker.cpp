// The worker process of the outbox crash matrix (outbox_crash_test.cpp):
// two endpoints on the broker with an outbox on one database: a SQLite
// file, or PostgreSQL when DB is "postgresql:<connection string>". ENDPOINT
// records each order in its own table `effects` and sends it on to
// ENDPOINT.next, whose handler records it in `next_effects`: the receiver
// with an inbox of its own.
//
//   BUS_RABBITMQ_URL=amqp://... outbox_crash_worker ENDPOINT TYPE DB [STEP N]
//
// With STEP, the process kills itself with SIGKILL the Nth time a delivery
// or a sweep reaches STEP: after_commit (the commit returned, nothing
// sent), after_dispatch (every send went out, not yet marked), after_mark
// (marked, not yet acknowledged). It prints "ready" once it consumes and runs until
// SIGTERM, then stops the bus and prints each endpoint's counters.
// BUS_TEST_SWEEP_INTERVAL_MS sets both endpoints' sweep interval (the
// process's lease on its records lasts three). BUS_TEST_FAIL_FIRST=1 fails
// the first attempt of each of ENDPOINT's messages after its writes (a
// rollback), and retries it a second later, in place; the transport then
// waits out a broker restart (operation timeout 2 min, reconnects every
// second at most).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>

#include "bus/bus.hpp"
#include "bus/forwarding_store.hpp"
#include "bus/postgres_store.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "bus/sqlite_store.hpp"

namespace {

struct order {
  std::string id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id)

// A transaction that calls `committed` after a commit that stored sends.
// The handler writes through the store's transaction it wraps (inner()).
class crashing_transaction : public bus::store_transaction {
public:
  crashing_transaction(std::unique_ptr<bus::store_transaction> inner, std::function<void()> committed)
    : inner_(std::move(inner)), committed_(std::move(committed)) {}
  bus::result<void> commit(const std::vector<std::string>& outgoing) override {
    auto done = inner_->commit(outgoing);
    if (done && !outgoing.empty())
      committed_();
    return done;
  }
  void rollback() noexcept override { inner_->rollback(); }
  [[nodiscard]] bus::store_transaction& inner() const { return *inner_; }

private:
  std::unique_ptr<bus::store_transaction> inner_;
  std::function<void()> committed_;
};

// The store of ENDPOINT, killing the process at the chosen step: a real
// kill -9 at an exact point of the delivery, no hook in the bus itself.
class crashing_store : public bus::forwarding_store {
public:
  crashing_store(std::shared_ptr<bus::message_store> inner, std::string step, int n)
    : forwarding_store(std::move(inner)), step_(std::move(step)), left_(n) {}

  bus::result<bus::inbox_entry> receive(const bus::inbox_key& key, bus::time_point now) override {
    auto entry = inner().receive(key, now);
    if (entry && entry->transaction)
      entry->transaction = std::make_unique<crashing_transaction>(
        std::move(entry->transaction), [this] { reached("after_commit"); });
    return entry;
  }

  bus::result<void> mark_dispatched(const bus::inbox_key& key, bus::time_point now) override {
    reached("after_dispatch");
    auto marked = inner().mark_dispatched(key, now);
    if (marked)
      reached("after_mark");
    return marked;
  }

private:
  void reached(const char* step) {
    if (step_ == step && --left_ == 0)
      std::raise(SIGKILL);
  }

  std::string step_;
  std::atomic<int> left_;
};

// Runs SQL of the handler's on the attempt's connection, whichever store.
void exec_in(bus::store_transaction& t, const std::string& sql) {
  if (auto* crashing = dynamic_cast<crashing_transaction*>(&t))
    return exec_in(crashing->inner(), sql);
  if (auto* pg = dynamic_cast<bus::postgres_transaction*>(&t)) {
    PGresult* r = PQexec(pg->connection(), sql.c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
      throw std::runtime_error(sql + ": " + PQerrorMessage(pg->connection()));
    return;
  }
  char* error = nullptr;
  if (sqlite3_exec(dynamic_cast<bus::sqlite_transaction&>(t).connection(), sql.c_str(), nullptr,
                   nullptr, &error)
      != SQLITE_OK) {
    std::string why = error ? error : "unknown";
    sqlite3_free(error);
    throw std::runtime_error(sql + ": " + why);
  }
}

void record(bus::handler_context& ctx, const char* table, const std::string& id) {
  exec_in(ctx.transaction<bus::store_transaction>(),
          std::string("INSERT INTO ") + table + " (order_id) VALUES ('" + id + "')");
}

constexpr const char* tables_sql = "CREATE TABLE IF NOT EXISTS effects (order_id TEXT NOT NULL);"
                                   "CREATE TABLE IF NOT EXISTS next_effects (order_id TEXT NOT NULL);";

// The user's tables and the store on DB.
bus::result<std::shared_ptr<bus::message_store>> open_store(const std::string& db) {
  constexpr std::string_view postgres = "postgresql:";
  if (db.compare(0, postgres.size(), postgres) == 0) {
    auto conninfo = db.substr(postgres.size());
    PGconn* conn = PQconnectdb(conninfo.c_str());
    PQclear(PQexec(conn, tables_sql));
    PQfinish(conn);
    auto store = bus::postgres_store::open({conninfo});
    if (!store)
      return store.error();
    return std::shared_ptr<bus::message_store>(*store);
  }
  sqlite3* conn = nullptr;
  sqlite3_open(db.c_str(), &conn);
  sqlite3_exec(conn, tables_sql, nullptr, nullptr, nullptr);
  sqlite3_close(conn);
  auto store = bus::sqlite_store::open({db});
  if (!store)
    return store.error();
  return std::shared_ptr<bus::message_store>(*store);
}

std::string counters(const bus::endpoint_stats& s) {
  return "received=" + std::to_string(s.received) + " handled=" + std::to_string(s.handled)
         + " duplicates=" + std::to_string(s.duplicates) + " requeued=" + std::to_string(s.requeued)
         + " failed_attempts=" + std::to_string(s.failed_attempts);
}

int run(const std::string& endpoint, const std::string& type, const std::string& db,
        const std::string& step, int n) {
  auto opened = open_store(db);
  if (!opened) {
    std::fprintf(stderr, "outbox worker: %s\n", to_string(opened.error()).c_str());
    return 2;
  }
  std::shared_ptr<bus::message_store> store = *opened;
  bus::outbox_options options;
  if (const char* ms = std::getenv("BUS_TEST_SWEEP_INTERVAL_MS"))
    options.sweep_interval = std::chrono::milliseconds(std::atoi(ms));
  std::shared_ptr<bus::message_store> upstream_store =
    step.empty() ? store : std::make_shared<crashing_store>(store, step, n);

  auto settings = bus::rabbitmq_settings_from_env();
  if (!settings) {
    std::fprintf(stderr, "outbox worker: %s\n", to_string(settings.error()).c_str());
    return 2;
  }
  settings->connection_name = "outbox worker " + std::to_string(::getpid());
  const bool fail_first = std::getenv("BUS_TEST_FAIL_FIRST") != nullptr;
  if (fail_first) {
    settings->operation_timeout = std::chrono::minutes(2);
    settings->reconnect_delay_min = std::chrono::milliseconds(100);
    settings->reconnect_delay_max = std::chrono::seconds(1);
  }
  auto transport = bus::rabbitmq_transport::connect(*settings);
  if (!transport) {
    std::fprintf(stderr, "outbox worker: %s\n", to_string(transport.error()).c_str());
    return 1;
  }
  const auto next = endpoint + ".next";
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.name("outbox-worker").transport(*transport).message<order>(type);
  // The ids whose first attempt failed here (fail_first).
  auto failed_once = std::make_shared<std::pair<std::mutex, std::set<std::string>>>();
  b.endpoint(endpoint, [&](bus::endpoint_builder& e) {
    if (fail_first)
      e.add_resilience([](bus::policy_builder& p) {
        p.on_any().retry(1, std::chrono::seconds(1)).jitter(false).then_redeliver();
      });
    e.slots(4).outbox(upstream_store, options).handle<order>([next, fail_first, failed_once](
                                                               const order& m,
                                                               bus::handler_context& ctx) {
      record(ctx, "effects", m.id);
      if (auto sent = ctx.send(next, order{m.id}); !sent)
        throw std::runtime_error(to_string(sent.error()));
      if (fail_first) {
        std::lock_guard lock(failed_once->first);
        if (failed_once->second.insert(m.id).second)
          throw std::runtime_error("the first attempt of order " + m.id + " fails");
      }
    });
  });
  b.endpoint(next, [&](bus::endpoint_builder& e) {
    // The same store; each endpoint's sweeper claims its own orphans only,
    // and the receiver leaves none (it sends nothing).
    e.slots(4).outbox(upstream_store, options).handle<order>([](const order& m,
                                                               bus::handler_context& ctx) {
      record(ctx, "next_effects", m.id);
    });
  });
  auto built = b.build();
  if (!built) {
    std::fprintf(stderr, "outbox worker: %s\n", built.error().message.c_str());
    return 2;
  }
  auto& bus = **built;
  if (auto started = bus.start(); !started) {
    std::fprintf(stderr, "outbox worker: %s\n", to_string(started.error()).c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  bus.stop();
  std::printf("%s: %s\n%s: %s\n", endpoint.c_str(), counters(*bus.stats(endpoint)).c_str(),
              next.c_str(), counters(*bus.stats(next)).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    std::fprintf(stderr, "usage: outbox_crash_worker ENDPOINT TYPE DB [STEP N] (BUS_RABBITMQ_URL "
                         "names the broker)\n");
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    return run(argv[1], argv[2], argv[3], argc == 6 ? argv[4] : "",
               argc == 6 ? std::atoi(argv[5]) : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "outbox worker: %s\n", e.what());
    return 1;
  }
}
