#include "outbox_db.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "bus/postgres_store.hpp"
#include "bus/sqlite_store.hpp"

namespace bench {

namespace {

// The handler's own table: one row per message, keyed by its id.
constexpr const char* orders_sql =
    "CREATE TABLE IF NOT EXISTS bench_orders (message_id TEXT PRIMARY KEY, seq BIGINT NOT NULL)";

std::string temp_folder() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/bus-bench-outbox.XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("cannot make a temporary folder for the SQLite file");
  return pattern;
}

} // namespace

void sqlite_closer::operator()(sqlite3* db) const noexcept {
  sqlite3_close_v2(db);
}
void pg_closer::operator()(pg_conn* c) const noexcept {
  PQfinish(c);
}

void exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string why = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw std::runtime_error(std::string("sqlite: ") + sql + ": " + why);
  }
}

void exec(pg_conn* c, const char* sql) {
  PGresult* r = PQexec(c, sql);
  auto status = PQresultStatus(r);
  PQclear(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    throw std::runtime_error(std::string("postgres: ") + sql + ": " + PQerrorMessage(c));
}

void insert_order(sqlite3* db, const std::string& message_id, std::uint64_t seq) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "INSERT INTO bench_orders (message_id, seq) VALUES (?1, ?2)", -1,
                              &stmt, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(stmt, 1, message_id.data(), static_cast<int>(message_id.size()),
                      SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 2, static_cast<sqlite3_int64>(seq));
    rc = sqlite3_step(stmt);
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE)
    throw std::runtime_error(std::string("sqlite: the handler's INSERT: ") + sqlite3_errmsg(db));
}

void insert_order(pg_conn* c, const std::string& message_id, std::uint64_t seq) {
  auto seq_text = std::to_string(seq);
  const char* values[] = {message_id.c_str(), seq_text.c_str()};
  PGresult* r =
      PQexecParams(c, "INSERT INTO bench_orders (message_id, seq) VALUES ($1, $2::bigint)", 2,
                   nullptr, values, nullptr, nullptr, 0);
  auto status = PQresultStatus(r);
  PQclear(r);
  if (status != PGRES_COMMAND_OK)
    throw std::runtime_error(std::string("postgres: the handler's INSERT: ") + PQerrorMessage(c));
}

bench_database::bench_database(const case_args& args) : kind_(args.text("store", "sqlite")) {
  if (kind_ == "sqlite") {
    dir_ = temp_folder();
    path_ = dir_ + "/outbox.db";
    auto opened = bus::sqlite_store::open({path_});
    if (!opened)
      throw std::runtime_error(opened.error().message);
    store_ = *opened;
    exec(open_sqlite().get(), orders_sql);
  } else if (kind_ == "postgres") {
    sqlite_ = false;
    admin_conninfo_ = args.text("conninfo", "");
    if (admin_conninfo_.empty())
      throw std::runtime_error("--store postgres needs --conninfo (a server's admin database)");
    std::random_device rd;
    database_ = "bench_" + std::to_string(getpid()) + "_" + std::to_string(rd() % 100000);
    pg_ptr admin(PQconnectdb(admin_conninfo_.c_str()));
    if (PQstatus(admin.get()) != CONNECTION_OK)
      throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(admin.get()));
    exec(admin.get(), ("CREATE DATABASE " + database_).c_str());
    // libpq takes the last of a repeated keyword: this names the run's database.
    conninfo_ = admin_conninfo_ + " dbname=" + database_;
    auto opened = bus::postgres_store::open({conninfo_});
    if (!opened)
      throw std::runtime_error(opened.error().message);
    store_ = *opened;
    exec(open_postgres().get(), orders_sql);
  } else {
    throw std::runtime_error("--store is sqlite or postgres, not '" + kind_ + "'");
  }
}

bench_database::~bench_database() {
  store_.reset(); // its connections close before their database goes
  if (sqlite_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    return;
  }
  pg_ptr admin(PQconnectdb(admin_conninfo_.c_str()));
  if (PQstatus(admin.get()) == CONNECTION_OK)
    PQclear(
        PQexec(admin.get(), ("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)").c_str()));
}

sqlite_ptr bench_database::open_sqlite() const {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  sqlite_ptr db(raw);
  if (rc != SQLITE_OK)
    throw std::runtime_error("sqlite: cannot open " + path_);
  sqlite3_busy_timeout(db.get(), 10'000); // the store's default busy timeout
  exec(db.get(), "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  return db;
}

pg_ptr bench_database::open_postgres() const {
  pg_ptr c(PQconnectdb(conninfo_.c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK)
    throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c.get()));
  exec(c.get(), "SET client_min_messages = warning");
  return c;
}

nlohmann::json bench_database::inbox_bytes() const {
  auto number = [](auto&& query) {
    double v = 0;
    query(v);
    return v;
  };
  nlohmann::json out;
  if (sqlite_) {
    auto db = open_sqlite();
    exec(db.get(), "PRAGMA wal_checkpoint(TRUNCATE)");
    auto scalar = [&](const char* sql) {
      return number([&](double& v) {
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db.get(), sql, -1, &stmt, nullptr) == SQLITE_OK
            && sqlite3_step(stmt) == SQLITE_ROW)
          v = sqlite3_column_double(stmt, 0);
        else
          v = -1; // dbstat is an optional part of SQLite
        sqlite3_finalize(stmt);
      });
    };
    auto records = scalar("SELECT count(*) FROM bus_inbox");
    auto tables = scalar("SELECT sum(pgsize) FROM dbstat WHERE name IN ('bus_inbox', "
                         "'bus_inbox_dispatched', 'bus_inbox_undispatched')");
    auto file =
        scalar("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
    out = {{"records", records}, {"inbox_bytes", tables}, {"file_bytes", file}};
    if (records > 0) {
      out["bytes_per_record"] = tables >= 0 ? nlohmann::json(tables / records) : nullptr;
      out["file_bytes_per_record"] = file / records;
    }
    return out;
  }
  auto c = open_postgres();
  auto scalar = [&](const char* sql) {
    return number([&](double& v) {
      PGresult* r = PQexec(c.get(), sql);
      v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? std::atof(PQgetvalue(r, 0, 0))
                                                                    : -1;
      PQclear(r);
    });
  };
  auto records = scalar("SELECT count(*) FROM bus_inbox");
  auto total = scalar("SELECT pg_total_relation_size('bus_inbox')");
  out = {{"records", records}, {"inbox_bytes", total}};
  if (records > 0)
    out["bytes_per_record"] = total / records;
  return out;
}

} // namespace bench
