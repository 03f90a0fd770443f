// The raw side of the outbox case (outbox.cpp): the same work per message
// without the bus, on one thread, against the same tables (the bus's store
// created them) with the store's own statements:
//   BEGIN; the inbox INSERT; the handler's INSERT (insert_order); the
//   outbox INSERT of the send's record (bus::encode_outgoing, as the bus
//   stores it); COMMIT; the send through the bus's in_memory_transport;
//   the mark (the inbox UPDATE and the outbox DELETE, committed together).
// What it leaves out is the bus itself: the delivery from the transport,
// the endpoint and consumer actors, the decoding, the policy, the ack.
#include <random>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "bus/in_memory_transport.hpp"
#include "bus/outgoing_message.hpp"
#include "measure.hpp"
#include "outbox_db.hpp"
#include "workload.hpp"

namespace bench {

namespace {

// The SQLite statements of the store (stores/sqlite/src/sqlite_pool.cpp),
// prepared once, as the store prepares them once per connection.
class sqlite_statements {
public:
  explicit sqlite_statements(sqlite3* db) : db_(db) {
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    inbox_ = prepare("INSERT INTO bus_inbox (endpoint, message_id, owner, received_at) "
                     "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
    outbox_ = prepare("INSERT INTO bus_outbox (endpoint, message_id, record, position) "
                      "VALUES (?1, ?2, ?3, ?4)");
    mark_ = prepare("UPDATE bus_inbox SET dispatched_at = ?3 WHERE endpoint = ?1 AND "
                    "message_id = ?2 AND dispatched_at IS NULL");
    delete_ = prepare("DELETE FROM bus_outbox WHERE endpoint = ?1 AND message_id = ?2");
  }
  ~sqlite_statements() {
    for (auto* s : {begin_, commit_, inbox_, outbox_, mark_, delete_})
      sqlite3_finalize(s);
  }
  sqlite_statements(const sqlite_statements&) = delete;
  sqlite_statements& operator=(const sqlite_statements&) = delete;

  void begin() { step(begin_, {}); }
  void commit() { step(commit_, {}); }
  void insert_inbox(const std::string& id, const std::string& owner, std::int64_t now_ms) {
    step(inbox_, {&outbox_endpoint, &id, &owner}, now_ms);
  }
  void insert_outbox(const std::string& id, const std::string& record) {
    step(outbox_, {&outbox_endpoint, &id, &record}, 0);
  }
  void mark(const std::string& id, std::int64_t now_ms) {
    begin();
    step(mark_, {&outbox_endpoint, &id}, now_ms);
    step(delete_, {&outbox_endpoint, &id});
    commit();
  }

private:
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("sqlite: ") + sql + ": " + sqlite3_errmsg(db_));
    return s;
  }

  // Binds the texts to ?1.. and `number`, if any, to the next; runs it.
  void step(sqlite3_stmt* s, std::initializer_list<const std::string*> texts,
            std::int64_t number = -1) {
    int i = 1;
    for (const auto* t : texts)
      sqlite3_bind_text(s, i++, t->data(), static_cast<int>(t->size()), SQLITE_STATIC);
    if (number >= 0)
      sqlite3_bind_int64(s, i, number);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_sql(s) + ": "
                               + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  sqlite3_stmt *begin_, *commit_, *inbox_, *outbox_, *mark_, *delete_;
};

// The PostgreSQL statements of the store (stores/postgres/src/
// postgres_pool.cpp), prepared once. The outbox INSERT is the single-row
// form of the store's (which takes an array of all of a message's sends).
class pg_statements {
public:
  explicit pg_statements(pg_conn* c) : c_(c) {
    prepare("bench_inbox", "INSERT INTO bus_inbox (endpoint, message_id, owner, received_at) "
                           "VALUES ($1, $2, $3, $4::bigint) ON CONFLICT DO NOTHING");
    prepare("bench_outbox", "INSERT INTO bus_outbox (endpoint, message_id, position, record) "
                            "VALUES ($1, $2, 0, $3)");
    prepare("bench_mark",
            "WITH marked AS (UPDATE bus_inbox SET dispatched_at = $3::bigint WHERE endpoint = $1 "
            "AND message_id = $2 AND dispatched_at IS NULL) "
            "DELETE FROM bus_outbox WHERE endpoint = $1 AND message_id = $2");
  }

  void begin() { exec(c_, "BEGIN"); }
  void commit() { exec(c_, "COMMIT"); }
  void insert_inbox(const std::string& id, const std::string& owner, std::int64_t now_ms) {
    run("bench_inbox", {outbox_endpoint, id, owner, std::to_string(now_ms)});
  }
  void insert_outbox(const std::string& id, const std::string& record) {
    run("bench_outbox", {outbox_endpoint, id, record});
  }
  void mark(const std::string& id, std::int64_t now_ms) {
    run("bench_mark", {outbox_endpoint, id, std::to_string(now_ms)});
  }

private:
  void prepare(const char* name, const char* sql) {
    PGresult* r = PQprepare(c_, name, sql, 0, nullptr);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
      throw std::runtime_error(std::string("postgres: ") + sql + ": " + PQerrorMessage(c_));
  }

  void run(const char* name, const std::vector<std::string>& values) {
    std::vector<const char*> texts;
    for (const auto& v : values)
      texts.push_back(v.c_str());
    PGresult* r =
        PQexecPrepared(c_, name, static_cast<int>(texts.size()), texts.data(), nullptr, nullptr, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
      throw std::runtime_error(std::string("postgres: ") + name + ": " + PQerrorMessage(c_));
  }

  pg_conn* c_;
};

// One message's work, whichever database: see the top of the file.
template <class Statements, class Connection>
void handle_raw(Statements& sql, Connection* db, bus::in_memory_transport& transport,
                std::mt19937_64& random, const std::string& owner, std::uint64_t seq) {
  auto id = bus::make_message_id(random(), random());
  sql.begin();
  sql.insert_inbox(id, owner, bus::to_unix_ms(std::chrono::system_clock::now()));
  insert_order(db, id, seq);
  bus::outgoing_message out;
  out.queue = outbox_next_queue;
  out.message.message_id = bus::make_message_id(random(), random());
  out.message.message_type = "bench_ping";
  out.message.correlation_id = id;
  out.message.sent_at = std::chrono::system_clock::now();
  out.message.source_address = outbox_endpoint;
  out.message.destination_address = outbox_next_queue;
  out.message.body = bus::message_body::text(nlohmann::json(ping{seq, 0}).dump());
  auto record = bus::encode_outgoing(out);
  if (!record)
    throw std::runtime_error(record.error().message);
  sql.insert_outbox(id, *record);
  sql.commit();
  if (auto sent = transport.send(out.queue, std::move(out.message)); !sent)
    throw std::runtime_error(sent.error().message);
  sql.mark(id, bus::to_unix_ms(std::chrono::system_clock::now()));
}

} // namespace

case_result run_outbox_raw(const case_args& args) {
  auto messages = static_cast<std::uint64_t>(args.number("messages", 2'000));
  bench_database db(args);
  bus::in_memory_transport transport;
  if (auto declared = transport.declare_queue(outbox_next_queue); !declared)
    throw std::runtime_error(declared.error().message);
  std::mt19937_64 random{std::random_device{}()};
  const auto owner = bus::detail::new_store_owner(); // as a store names itself

  std::uint64_t handled = 0;
  auto start = steady::now();
  if (db.is_sqlite()) {
    auto c = db.open_sqlite();
    sqlite_statements sql(c.get());
    for (; handled < messages; ++handled)
      handle_raw(sql, c.get(), transport, random, owner, handled);
  } else {
    auto c = db.open_postgres();
    pg_statements sql(c.get());
    for (; handled < messages; ++handled)
      handle_raw(sql, c.get(), transport, random, owner, handled);
  }
  auto seconds = seconds_since(start);

  return {{"case", "outbox"},
          {"impl", "raw"},
          {"store", db.kind()},
          {"transport", "in_memory"},
          {"slots", 1},
          {"messages", messages},
          {"finished", handled == messages},
          {"seconds", seconds},
          {"msgs_per_s", static_cast<double>(handled) / seconds},
          {"inbox", db.inbox_bytes()},
          {"peak_rss_kb", peak_rss_kb()}};
}

} // namespace bench
