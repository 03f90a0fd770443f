// A large cleanup while messages flow (issue 21): 20,000 old inbox records
// deleted batch by batch while 10,000 messages go through the same SQLite
// file on real threads. SQLite has one writer at a time, so every batch
// and every attempt take turns on the file's lock: the test shows that
// the cleanup neither stalls the deliveries past their busy timeout nor
// takes a record of theirs, and that nothing is lost or doubled.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <condition_variable>
#include <mutex>

#include "bus/forwarding_store.hpp"
#include "bus/sqlite_store.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/eventually.hpp"
#include "support/real_threads_bus.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

// The SQLite store, with each of the cleanup's first `paced` batches held
// back until the consumers have handled `step` more messages: the batches
// then certainly fall among the deliveries, whatever the threads' speed.
class pacing_store final : public bus::forwarding_store {
public:
  pacing_store(std::shared_ptr<bus::message_store> inner, int paced, int step)
    : forwarding_store(std::move(inner)), paced_(paced), step_(step) {}

  // A handler's message went through.
  void handled() {
    std::lock_guard lock(mutex_);
    ++handled_;
    changed_.notify_all();
  }
  // How many messages were handled as each paced batch began.
  [[nodiscard]] std::vector<int> handled_at_batches() const {
    std::lock_guard lock(mutex_);
    return at_batches_;
  }

  bus::result<std::size_t> clean(const std::string& endpoint, bus::time_point before,
                                 std::size_t batch) override {
    {
      std::unique_lock lock(mutex_);
      auto next = static_cast<int>(at_batches_.size());
      if (next < paced_) {
        changed_.wait_for(lock, 30s, [&] { return handled_ >= next * step_; });
        at_batches_.push_back(handled_);
      }
    }
    return inner().clean(endpoint, before, batch);
  }

private:
  const int paced_;
  const int step_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int handled_ = 0;
  std::vector<int> at_batches_;
};

} // namespace

TEST_CASE("outbox: a cleanup of 20,000 records runs batch by batch among 10,000 messages on the "
          "same file, and takes none of theirs") {
  constexpr int old_records = 20'000;
  constexpr int batch = 500;
  constexpr int messages = 10'000;
  bus::test::scratch_directory dir;
  auto path = dir.file("billing.db");
  auto opened = bus::sqlite_store::open({path});
  REQUIRE(opened);
  bus::test::reader db(path);
  db.exec("CREATE TABLE orders (id TEXT NOT NULL)");
  // Records of messages handled long ago, as a bus would have left them.
  db.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
          "INSERT INTO bus_inbox (endpoint, message_id, received_at, dispatched_at, owner) "
          "SELECT 'billing', 'old-' || i, 0, 0, 'gone' FROM n");
  // A batch per 200 messages: the cleanup spans the first 8,000.
  auto store = std::make_shared<pacing_store>(*opened, old_records / batch, 200);

  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  bus::outbox_options options;
  options.retention = 25h; // the default policies retry for 24 h at most
  options.cleanup_interval = 10ms;
  options.cleanup_batch = batch;
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(4).outbox(store, options).handle<order_placed>([store](const order_placed& m,
                                                                   bus::handler_context& ctx) {
      auto* conn = ctx.transaction<bus::sqlite_transaction>().connection();
      auto sql = "INSERT INTO orders VALUES ('" + m.order_id + "')";
      if (sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
        throw std::runtime_error(sqlite3_errmsg(conn));
      store->handled();
    });
  });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), 1}));
  CHECK(bus::test::eventually([&] { return bus->stats("billing")->handled == messages; }, 120s));
  CHECK(bus::test::eventually(
    [&] { return bus->stats("billing")->inbox_records_cleaned == old_records; }, 30s));
  bus->stop();

  auto s = *bus->stats("billing");
  CHECK(s.failed_attempts == 0); // no delivery waited past its busy timeout
  CHECK(s.handled == messages);
  CHECK(db.number("SELECT count(*) FROM orders") == messages);
  CHECK(db.number("SELECT count(DISTINCT id) FROM orders") == messages);
  CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE owner = 'gone'") == 0);
  CHECK(db.number("SELECT count(*) FROM bus_inbox") == messages);
  // The batches fell among the deliveries, from the first to the 8,000th.
  auto at = store->handled_at_batches();
  REQUIRE(at.size() == static_cast<std::size_t>(old_records / batch));
  CHECK(at.front() < messages / 10);
  CHECK(at.back() >= 7'800);
  CHECK(at.back() < messages);
}
