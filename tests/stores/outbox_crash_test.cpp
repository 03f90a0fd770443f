// The outbox's crash matrix (issue 21): a worker process on a real broker
// and a real database (a SQLite file, a PostgreSQL database on the
// fixture's server) kills itself with SIGKILL at one step of one delivery
// (outbox_crash_worker.cpp): after the handler's commit and before
// dispatch, after dispatch and before the mark, after the mark and before
// the acknowledgement, and in the middle of a sweep. Another worker takes
// over. Afterwards every order left its effect exactly once in the
// handler's own table, every sent message reached the receiver and was
// processed there exactly once, and nothing is left in the outbox.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include "broker.hpp"
#include "bus/header_names.hpp"
#include "bus/outgoing_message.hpp"
#include "bus/postgres_store.hpp"
#include "bus/sqlite_store.hpp"
#include "child_process.hpp"
#include "stores/postgres_server.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/eventually.hpp"
#include "support/file_text.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;

namespace {

using bus::test::file_text;

constexpr int orders = 12;

// The workers' database, and the test's own connection to read it.
class crash_database {
public:
  explicit crash_database(const std::string& kind) {
    if (kind == "postgresql") {
      auto conninfo = bus::test::postgres_server().fresh_database();
      worker_arg_ = "postgresql:" + conninfo;
      postgres_ = std::make_unique<bus::test::pg_reader>(conninfo);
      auto store = bus::postgres_store::open({conninfo});
      REQUIRE(store);
      store_ = *store;
    } else {
      worker_arg_ = dir_.file("bus.db");
      sqlite_ = std::make_unique<bus::test::reader>(worker_arg_);
      auto store = bus::sqlite_store::open({worker_arg_});
      REQUIRE(store);
      store_ = *store;
    }
    // The workers' own tables (they create them too, if missing): the test
    // may look before either worker started.
    for (const char* table : {"effects", "next_effects"}) {
      auto sql = std::string("CREATE TABLE IF NOT EXISTS ") + table + " (order_id TEXT NOT NULL)";
      postgres_ ? postgres_->exec(sql) : sqlite_->exec(sql);
    }
  }
  // How a worker names it (outbox_crash_worker's DB).
  [[nodiscard]] const std::string& worker_arg() const { return worker_arg_; }
  // The single number `sql` selects.
  [[nodiscard]] long long number(const std::string& sql) const {
    return postgres_ ? postgres_->number(sql) : sqlite_->number(sql);
  }
  // A store of the test's own on it, as a third process's.
  [[nodiscard]] bus::message_store& store() const { return *store_; }
  [[nodiscard]] const bus::test::scratch_directory& dir() const { return dir_; }

private:
  bus::test::scratch_directory dir_;
  std::string worker_arg_;
  std::unique_ptr<bus::test::reader> sqlite_;
  std::unique_ptr<bus::test::pg_reader> postgres_;
  std::shared_ptr<bus::message_store> store_;
};

std::unique_ptr<bus::test::child_process> start_worker(std::vector<std::string> args,
                                                       const std::string& output,
                                                       const std::string& sweep_ms = "10000",
                                                       std::vector<std::string> env = {}) {
  env.push_back("BUS_RABBITMQ_URL=" + bus::test::broker_env("BUS_RABBITMQ_URL"));
  env.push_back("BUS_TEST_SWEEP_INTERVAL_MS=" + sweep_ms);
  return std::make_unique<bus::test::child_process>(BUS_OUTBOX_CRASH_WORKER, std::move(args),
                                                    std::move(env), output);
}

// Stops a worker that finished its work; it must exit cleanly (a
// sanitizer's report exits otherwise).
void stop_worker(bus::test::child_process& worker, const std::string& output) {
  worker.signal(SIGTERM);
  auto stopped = worker.wait(60s);
  REQUIRE(stopped);
  INFO("worker output:\n" << file_text(output));
  CHECK(WIFEXITED(*stopped));
  CHECK(WEXITSTATUS(*stopped) == 0);
}

// A producer on the shared broker, with the worker's two queues declared:
// its first endpoint sends on before its second has declared the other.
std::shared_ptr<bus::rabbitmq_transport> declare_queues(const std::string& endpoint) {
  auto producer = bus::test::connect_transport();
  REQUIRE(producer->declare_queue(endpoint));
  REQUIRE(producer->declare_queue(endpoint + ".next"));
  return producer;
}

// Every one of `n` orders reached the receiver, and nothing waits in the outbox.
bool all_sent_on(const crash_database& db, int n) {
  return db.number("SELECT count(DISTINCT order_id) FROM next_effects") == n
         && db.number("SELECT count(*) FROM bus_outbox") == 0;
}

// Waits for a worker to kill itself with SIGKILL.
void expect_killed(bus::test::child_process& worker, const std::string& output) {
  auto status = worker.wait(60s);
  INFO("worker output:\n" << file_text(output));
  REQUIRE(status);
  REQUIRE(WIFSIGNALED(*status));
  CHECK(WTERMSIG(*status) == SIGKILL);
}

bus::envelope order_message(int i, const std::string& type) {
  bus::envelope env;
  env.message_id = "m-" + std::to_string(i);
  env.message_type = type;
  env.body = bus::message_body::text(R"({"id":"o-)" + std::to_string(i) + R"("})");
  return env;
}

} // namespace

TEST_CASE("outbox: kill -9 at each step of a delivery leaves every effect once and every send "
          "processed once",
          "[rabbitmq][outbox][crash][steps_of_a_delivery]") {
  auto kind = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  auto step = GENERATE(as<std::string>{}, "after_commit", "after_dispatch", "after_mark");
  DYNAMIC_SECTION("on " << kind << ", killed " << step) {
    crash_database db(kind);
    auto endpoint = bus::test::unique_name("outbox." + step);
    auto type = bus::test::unique_name("order");
    auto output = db.dir().file("worker.out");
    auto producer = declare_queues(endpoint);
    for (int i = 0; i < orders; ++i)
      REQUIRE(producer->send(endpoint, order_message(i, type)));

    // The fifth delivery to reach the step kills the process.
    auto first = start_worker({endpoint, type, db.worker_arg(), step, "5"}, output);
    expect_killed(*first, output);

    auto second = start_worker({endpoint, type, db.worker_arg()}, output);
    CHECK(bus::test::eventually([&] { return all_sent_on(db, orders); }, 60s));
    stop_worker(*second, output);

    CHECK(db.number("SELECT count(*) FROM effects") == orders);
    CHECK(db.number("SELECT count(DISTINCT order_id) FROM effects") == orders);
    CHECK(db.number("SELECT count(*) FROM next_effects") == orders);
    CHECK(db.number("SELECT count(*) FROM bus_outbox") == 0);
    CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
    CHECK(db.number("SELECT count(*) FROM bus_inbox") == 2 * orders);
    // What the step left for the second worker to find.
    auto log = file_text(output);
    if (step == "after_commit") // stored, not sent: sent from the rows, the handler not run
      CHECK_THAT(log, Catch::Contains("that did not all go out"));
    else if (step == "after_dispatch") // sent, not marked: sent again, dropped by the receiver
      CHECK_THAT(log, Catch::Contains(endpoint + ".next' already"));
    else // marked, not acknowledged: the copy is dropped by the sender's inbox
      CHECK_THAT(log, Catch::Contains("by endpoint '" + endpoint + "' already (its inbox record)"));
  }
}

TEST_CASE("outbox: kill -9 in the middle of a sweep: another process's sweeper sends the rest, and "
          "each is processed once",
          "[rabbitmq][outbox][crash][middle_of_a_sweep]") {
  auto kind = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  DYNAMIC_SECTION("on " << kind) {
    crash_database db(kind);
    auto endpoint = bus::test::unique_name("outbox.sweep");
    auto type = bus::test::unique_name("order");
    auto output = db.dir().file("worker.out");
    auto producer = declare_queues(endpoint);
    // Sends that a dead process stored and gave up: only a sweep sends them.
    for (int i = 0; i < orders; ++i) {
      bus::inbox_key key{endpoint, "m-" + std::to_string(i)};
      auto stored = db.store().receive(key, std::chrono::system_clock::now());
      REQUIRE(stored);
      auto record = bus::encode_outgoing({endpoint + ".next", order_message(i, type), {}});
      REQUIRE(record);
      REQUIRE(stored->transaction->commit({*record}));
      REQUIRE(db.store().release(key));
    }

    // The third sweep's send to go out kills the process before its mark.
    auto first = start_worker({endpoint, type, db.worker_arg(), "after_dispatch", "3"}, output,
                              "200");
    expect_killed(*first, output);
    CHECK(db.number("SELECT count(*) FROM bus_outbox") > 0);

    // The dead one's lease lasts three sweep intervals; then the second's
    // sweeper claims what it held and sends it.
    auto second = start_worker({endpoint, type, db.worker_arg()}, output, "200");
    CHECK(bus::test::eventually([&] { return all_sent_on(db, orders); }, 60s));
    stop_worker(*second, output);
    CHECK(db.number("SELECT count(*) FROM next_effects") == orders);
    CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
    // The one sent and not marked went out twice; the receiver's inbox dropped the copy.
    CHECK_THAT(file_text(output), Catch::Contains(endpoint + ".next' already"));
  }
}

TEST_CASE("outbox: every message delivered twice, the copies landing at once on two processes "
          "sharing one database: each effect once",
          "[rabbitmq][outbox][crash][two_processes]") {
  auto kind = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  DYNAMIC_SECTION("on " << kind) {
    crash_database db(kind);
    auto endpoint = bus::test::unique_name("outbox.twice");
    auto type = bus::test::unique_name("order");
    auto producer = declare_queues(endpoint);
    constexpr int messages = 40;
    // Both copies queued before either process consumes: with 4 slots each,
    // the two processes take copies of the same message at the same time.
    for (int i = 0; i < messages; ++i) {
      REQUIRE(producer->send(endpoint, order_message(i, type)));
      REQUIRE(producer->send(endpoint, order_message(i, type)));
    }
    auto one_output = db.dir().file("one.out");
    auto other_output = db.dir().file("other.out");
    auto one = start_worker({endpoint, type, db.worker_arg()}, one_output);
    auto other = start_worker({endpoint, type, db.worker_arg()}, other_output);
    CHECK(bus::test::eventually([&] { return all_sent_on(db, messages); }, 60s));
    stop_worker(*one, one_output);
    stop_worker(*other, other_output);
    CHECK(db.number("SELECT count(*) FROM effects") == messages);
    CHECK(db.number("SELECT count(*) FROM next_effects") == messages);
    CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
    // Each copy was recognised by the inbox and counted, on one process or the other.
    auto duplicates = [](const std::string& out, const std::string& name) {
      auto at = out.find(name + ": ");
      REQUIRE(at != std::string::npos);
      auto count = out.find("duplicates=", at);
      return std::stoi(out.substr(count + std::string("duplicates=").size()));
    };
    auto one_log = file_text(one_output);
    auto other_log = file_text(other_output);
    INFO(one_log << other_log);
    CHECK(duplicates(one_log, endpoint) + duplicates(other_log, endpoint) == messages);
  }
}

TEST_CASE("outbox: the broker restarted while every message's retry waits: each effect once, "
          "each send processed once",
          "[rabbitmq][outbox][crash][broker_restart]") {
  auto kind = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  DYNAMIC_SECTION("on " << kind) {
    crash_database db(kind);
    auto endpoint = bus::test::unique_name("outbox.restart");
    auto type = bus::test::unique_name("order");
    auto output = db.dir().file("worker.out");
    auto producer = declare_queues(endpoint);
    constexpr int messages = 100;
    for (int i = 0; i < messages; ++i)
      REQUIRE(producer->send(endpoint, order_message(i, type)));
    producer.reset(); // the restart would cut it anyway

    // Each first attempt fails and its retry waits a second, holding its
    // delivery: the restart takes the channel of deliveries whose retry
    // then succeeds but cannot be acknowledged, so the broker delivers
    // them again (the case of issue 21: 32 of 100 handlers ran twice).
    auto worker = start_worker({endpoint, type, db.worker_arg()}, output, "10000",
                               {"BUS_TEST_FAIL_FIRST=1"});
    REQUIRE(bus::test::eventually(
      [&] { return db.number("SELECT count(*) FROM next_effects") >= 8; }, 60s));
    REQUIRE(std::system((bus::test::broker_env("BUS_RABBITMQ_RESTART") + " >/dev/null").c_str())
            == 0);
    CHECK(bus::test::eventually([&] { return all_sent_on(db, messages); }, 180s));
    stop_worker(*worker, output);
    CHECK(db.number("SELECT count(*) FROM effects") == messages);
    CHECK(db.number("SELECT count(DISTINCT order_id) FROM effects") == messages);
    CHECK(db.number("SELECT count(*) FROM next_effects") == messages);
    CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
  }
}
