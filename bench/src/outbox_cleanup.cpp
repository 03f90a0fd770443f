// The cleanup of many inbox records, and what it does to a consumer on the
// same database: `bus-bench outbox_cleanup --store sqlite|postgres
// --records N [--batch 1000] [--consumer-messages M] [--conninfo C]`.
//
// 1. N records of the endpoint "bench", dispatched two days ago, are
//    written straight into bus_inbox in one statement (a recursive CTE on
//    SQLite, generate_series on PostgreSQL), with random UUIDs as message
//    ids as the bus's are, so the B-trees are as full as the bus leaves
//    them. Then the inbox's bytes per record are measured.
// 2. Idle: a consumer (one thread, the store's own calls: receive, commit
//    of one outbox row, mark_dispatched, on keys of another endpoint) does
//    M messages alone; each message's time is recorded.
// 3. Busy: the consumer runs again while the main thread cleans: the
//    store's clean("bench", a day ago, batch) in a loop until a batch comes
//    back short, as the bus's cleaner does. Timed; the consumer's per-
//    message times during the cleanup are recorded.
// The figures: the cleanup's time and rate, and the consumer's p50/p99
// busy against idle.
#include <atomic>
#include <random>
#include <thread>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "bus/outgoing_message.hpp"
#include "measure.hpp"
#include "outbox_db.hpp"
#include "workload.hpp"

namespace bench {

namespace {

const std::string consumer_endpoint = "bench-consumer";

void prepopulate(const bench_database& db, std::uint64_t records, std::int64_t at_ms) {
  const auto owner = bus::detail::new_store_owner();
  const auto n = std::to_string(records), at = std::to_string(at_ms);
  if (db.is_sqlite()) {
    auto c = db.open_sqlite();
    // A cache for the whole table: random keys touch every page.
    exec(c.get(), "PRAGMA cache_size = -524288");
    auto sql =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " + n
        + ") INSERT INTO bus_inbox (endpoint, message_id, received_at, dispatched_at, owner) "
          "SELECT '"
        + outbox_endpoint
        + "', lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) "
          "|| '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21)), "
        + at + ", " + at + ", '" + owner + "' FROM (SELECT hex(randomblob(16)) AS h FROM n)";
    exec(c.get(), sql.c_str());
    return;
  }
  auto c = db.open_postgres();
  auto sql = "INSERT INTO bus_inbox (endpoint, message_id, received_at, dispatched_at, owner) "
             "SELECT '"
             + outbox_endpoint + "', gen_random_uuid()::text, " + at + ", " + at + ", '" + owner
             + "' FROM generate_series(1, " + n + ")";
  exec(c.get(), sql.c_str());
  // What autovacuum would have done by the time a table grew this large.
  exec(c.get(), "VACUUM ANALYZE bus_inbox");
}

// One message of the consumer through the store, as the bus's consumer
// calls it; its time in microseconds.
double consume_one(bus::message_store& store, std::mt19937_64& random, const std::string& record) {
  auto start = now_ns();
  bus::inbox_key key{consumer_endpoint, bus::make_message_id(random(), random())};
  auto entry = store.receive(key, std::chrono::system_clock::now());
  if (!entry || !entry->transaction)
    throw std::runtime_error("the consumer's receive failed: "
                             + (entry ? std::string("a duplicate") : entry.error().message));
  if (auto done = entry->transaction->commit({record}); !done)
    throw std::runtime_error("the consumer's commit failed: " + done.error().message);
  if (auto marked = store.mark_dispatched(key, std::chrono::system_clock::now()); !marked)
    throw std::runtime_error("the consumer's mark failed: " + marked.error().message);
  return static_cast<double>(now_ns() - start) / 1000.0;
}

nlohmann::json summary(std::vector<double> us, double seconds) {
  auto n = us.size();
  return {{"messages", n},
          {"msgs_per_s", seconds > 0 ? static_cast<double>(n) / seconds : 0.0},
          {"p50_us", quantile(us, 0.50)},
          {"p99_us", quantile(us, 0.99)},
          {"max_us", us.empty() ? 0.0 : us.back()}};
}

} // namespace

case_result run_outbox_cleanup(const case_args& args) {
  auto records = static_cast<std::uint64_t>(args.number("records", 1'000'000));
  auto batch = static_cast<std::size_t>(args.number("batch", 1'000));
  auto consumer_messages = static_cast<std::size_t>(args.number("consumer-messages", 2'000));
  bench_database db(args);
  auto& store = *db.store();
  const auto now = std::chrono::system_clock::now();

  auto fill_start = steady::now();
  prepopulate(db, records, bus::to_unix_ms(now - std::chrono::hours(48)));
  auto fill_seconds = seconds_since(fill_start);
  auto inbox = db.inbox_bytes();

  std::mt19937_64 random{std::random_device{}()};
  bus::outgoing_message out;
  out.queue = outbox_next_queue;
  out.message.message_id = bus::make_message_id(random(), random());
  out.message.message_type = "bench_ping";
  out.message.body = bus::message_body::text(nlohmann::json(ping{}).dump());
  auto record = bus::encode_outgoing(out);
  if (!record)
    throw std::runtime_error(record.error().message);

  std::vector<double> idle;
  auto idle_start = steady::now();
  for (std::size_t i = 0; i < consumer_messages; ++i)
    idle.push_back(consume_one(store, random, *record));
  auto idle_seconds = seconds_since(idle_start);

  std::atomic<bool> cleaning{true};
  std::vector<double> busy;
  std::string consumer_failure;
  std::thread consumer([&] {
    std::mt19937_64 own{std::random_device{}()};
    try {
      while (cleaning.load())
        busy.push_back(consume_one(store, own, *record));
    } catch (const std::exception& e) {
      consumer_failure = e.what();
    }
  });
  std::size_t cleaned = 0, batches = 0;
  std::string clean_failure;
  auto clean_start = steady::now();
  for (;;) {
    auto n = store.clean(outbox_endpoint, now - std::chrono::hours(24), batch);
    if (!n) {
      clean_failure = n.error().message;
      break;
    }
    cleaned += *n;
    ++batches;
    if (*n < batch)
      break;
  }
  auto clean_seconds = seconds_since(clean_start);
  cleaning.store(false);
  consumer.join();
  if (!clean_failure.empty() || !consumer_failure.empty())
    throw std::runtime_error(clean_failure.empty() ? consumer_failure : clean_failure);

  return {{"case", "outbox_cleanup"},
          {"store", db.kind()},
          {"records", records},
          {"batch", batch},
          {"fill_s", fill_seconds},
          {"inbox", inbox},
          {"bytes_per_record", inbox.value("bytes_per_record", nlohmann::json())},
          {"cleaned", cleaned},
          {"batches", batches},
          {"finished", cleaned == records},
          {"clean_s", clean_seconds},
          {"clean_records_per_s", static_cast<double>(cleaned) / clean_seconds},
          {"consumer_idle", summary(idle, idle_seconds)},
          {"consumer_busy", summary(busy, clean_seconds)},
          {"consumer_idle_p99_us", quantile(idle, 0.99)},
          {"consumer_busy_p99_us", quantile(busy, 0.99)},
          {"peak_rss_kb", peak_rss_kb()}};
}

} // namespace bench
