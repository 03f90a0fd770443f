// The outbox on the bus: `bus-bench outbox --store sqlite|postgres --impl
// bus|plain|raw --messages N [--slots S] [--conninfo C]`.
//
// bus: one endpoint with e.outbox(store) on the in-memory transport. Per
//   message the bus opens the transaction with the inbox record, the
//   handler INSERTs the message into the user's table through the
//   attempt's connection and calls ctx.send() once, the bus commits the
//   send as an outbox row with both, sends it through the transport, marks
//   it dispatched and acknowledges. A message is done when its mark
//   returns (timing_store counts them), and the store wrapper also times
//   commit to mark: the commit-to-dispatch latency.
// plain: the same handler without an outbox: its INSERT commits on its own
//   (autocommit, a connection of the benchmark's per slot), no inbox, and
//   its send goes out when it returns. The price of exactly-once is the
//   gap between plain and bus.
// raw: the same work without the bus (outbox_raw.cpp).
// --url amqp://... (bus and plain, when built with RabbitMQ): the same on
//   the RabbitMQ transport, with queues of the run's own, deleted at the
//   end: commit to dispatch then includes the broker's confirm of the send.
//
// The main thread sends the pings closed loop (at most --window unfinished),
// timed from the first send until the last message is done. Each run has a
// database of its own (outbox_db.hpp), removed at the end.
#include <mutex>
#include <random>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "actor_system.hpp"
#include "bench_bus.hpp"
#include "bus/postgres_store.hpp"
#include "bus/sqlite_store.hpp"
#include "measure.hpp"
#include "outbox_db.hpp"
#include "producer.hpp"
#include "timing_store.hpp"
#include "workload.hpp"

#ifdef BUS_BENCH_WITH_RABBITMQ
#include <unistd.h>

#include "bus/rabbitmq_transport.hpp"
#include "raw_amqp.hpp"
#endif

namespace bench {

namespace {

// The transport of a run and the names of its two queues: the in-memory
// transport and the fixed names, or, with --url, RabbitMQ and names of
// the run's own (removed by the destructor, with the error and skipped
// queues an endpoint declares beside its own).
struct run_transport {
  bus::transport_ptr transport;
  std::string endpoint = outbox_endpoint;
  std::string next = outbox_next_queue;
  std::string url;

  explicit run_transport(const std::string& amqp_url) : url(amqp_url) {
    if (url.empty()) {
      transport = std::make_shared<bus::in_memory_transport>();
    } else {
#ifdef BUS_BENCH_WITH_RABBITMQ
      auto settings = bus::parse_rabbitmq_url(url);
      if (!settings)
        throw std::runtime_error("bad broker URL: " + settings.error().message);
      settings->log = [](bus::rabbitmq_log_level, const std::string&) {};
      auto connected = bus::rabbitmq_transport::connect(*settings);
      if (!connected)
        throw std::runtime_error(connected.error().message);
      transport = *connected;
      std::random_device rd;
      endpoint = "bench-outbox-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 100000);
      next = endpoint + "-next";
#else
      throw std::runtime_error("--url: bus-bench is built without the RabbitMQ transport");
#endif
    }
    if (auto declared = transport->declare_queue(next); !declared)
      throw std::runtime_error(declared.error().message);
  }

  ~run_transport() {
#ifdef BUS_BENCH_WITH_RABBITMQ
    if (url.empty())
      return;
    try {
      raw_amqp admin(url);
      for (const auto& q : {endpoint, endpoint + "_error", endpoint + "_skipped", next})
        admin.delete_queue(q);
    } catch (const std::exception&) {
      // The broker is throwaway: a queue left behind harms no later run.
    }
#endif
  }

  [[nodiscard]] std::string name() const {
    return url.empty() ? "in_memory" : "rabbitmq";
  }
};

// The store's transaction the bus handed the handler, through the timing
// wrapper (whose inner() it is).
template <class Transaction> Transaction& real_transaction(bus::handler_context& ctx) {
  auto& timed = ctx.transaction<timing_store::timed_transaction>();
  auto* typed = dynamic_cast<Transaction*>(&timed.inner());
  if (!typed)
    throw std::logic_error("the outbox's transaction is of another store");
  return *typed;
}

// The plain handler's connections, one per slot at most: a slot takes one
// for its INSERT and gives it back, so no two threads share one.
template <class Connection> class connection_pool {
public:
  explicit connection_pool(std::function<Connection()> open) : open_(std::move(open)) {}

  template <class F> void with(F&& f) {
    Connection c;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!c)
      c = open_();
    f(c.get());
    std::lock_guard<std::mutex> guard(mutex_);
    idle_.push_back(std::move(c));
  }

private:
  std::function<Connection()> open_;
  std::mutex mutex_;
  std::vector<Connection> idle_;
};

} // namespace

case_result run_outbox(const case_args& args) {
  auto impl = args.text("impl", "bus");
  if (impl == "raw")
    return run_outbox_raw(args);
  if (impl != "bus" && impl != "plain")
    throw std::runtime_error("--impl is bus, plain or raw, not '" + impl + "'");
  auto messages = static_cast<std::uint64_t>(args.number("messages", 2'000));
  auto slots = static_cast<std::size_t>(args.number("slots", 1));
  auto window = static_cast<std::uint64_t>(args.number("window", 1'000));
  const bool outbox = impl == "bus";

  bench_database db(args);
  caf::actor_system_config cfg;
  configure(cfg, args);
  caf::actor_system sys{cfg};
  completion done;
  auto timed = std::make_shared<timing_store>(db.store(), done);
  connection_pool<sqlite_ptr> sqlite_connections([&db] { return db.open_sqlite(); });
  connection_pool<pg_ptr> pg_connections([&db] { return db.open_postgres(); });

  run_transport t(args.text("url", ""));
  bus::bus_builder b{sys};
  b.transport(t.transport)
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<ping>("bench_ping");
  const bool sqlite = db.is_sqlite();
  b.endpoint(t.endpoint, [&](bus::endpoint_builder& e) {
    // The default handler threads (a thread per slot): the store's calls
    // block, and the bus refuses an outbox on CAF's workers.
    e.slots(slots);
    if (outbox)
      e.outbox(timed);
    e.handle<ping>([&, outbox, sqlite](const ping& m, bus::handler_context& ctx) {
      if (outbox && sqlite)
        insert_order(real_transaction<bus::sqlite_transaction>(ctx).connection(), ctx.message_id(),
                     m.seq);
      else if (outbox)
        insert_order(real_transaction<bus::postgres_transaction>(ctx).connection(),
                     ctx.message_id(), m.seq);
      else if (sqlite)
        sqlite_connections.with([&](sqlite3* c) { insert_order(c, ctx.message_id(), m.seq); });
      else
        pg_connections.with([&](pg_conn* c) { insert_order(c, ctx.message_id(), m.seq); });
      if (auto sent = ctx.send(t.next, ping{m.seq, 0}); !sent)
        throw std::runtime_error(sent.error().message);
      if (!outbox) // no mark to count: done once its INSERT committed
        done.complete();
    });
  });
  auto built = b.build();
  if (!built)
    throw std::runtime_error("the outbox bus does not build: " + built.error().message);
  auto& bus = **built;
  if (auto ok = bus.start(); !ok)
    throw std::runtime_error(ok.error().message);

  auto send = [&](ping p) { (void)bus.send(t.endpoint, p); };
  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 300));
  auto start = steady::now();
  bool finished = send_closed_loop(send, done, messages, window, deadline);
  auto seconds = seconds_since(start);
  bus.stop();

  case_result r{{"case", "outbox"},
                {"impl", impl},
                {"store", db.kind()},
                {"transport", t.name()},
                {"slots", slots},
                {"messages", messages},
                {"finished", finished},
                {"seconds", seconds},
                {"msgs_per_s", static_cast<double>(done.done()) / seconds}};
  if (outbox) {
    auto us = timed->latencies_us();
    r["dispatch_samples"] = us.size();
    r["commit_to_dispatch_p50_us"] = quantile(us, 0.50);
    r["commit_to_dispatch_p99_us"] = quantile(us, 0.99);
    r["commit_to_dispatch_max_us"] = us.empty() ? 0.0 : us.back();
    // Receive to marked: the database's part of a delivery. Its mean
    // against 1 / msgs_per_s (one slot) leaves the runtime's own part.
    auto in_store = timed->in_store_us();
    double sum = 0;
    for (auto v : in_store)
      sum += v;
    r["receive_to_marked_mean_us"] =
        in_store.empty() ? 0.0 : sum / static_cast<double>(in_store.size());
    r["receive_to_marked_p50_us"] = quantile(in_store, 0.50);
    auto [receive_us, commit_us, mark_us] = timed->call_means_us();
    r["store_call_mean_us"] = {{"receive", receive_us}, {"commit", commit_us}, {"mark", mark_us}};
    r["inbox"] = db.inbox_bytes(); // the records this run's messages left
  }
  r["peak_rss_kb"] = peak_rss_kb();
  return r;
}

} // namespace bench
