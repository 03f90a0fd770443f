// The tests' PostgreSQL server (scripts/postgres-test-server.sh), found
// through BUS_POSTGRES_TEST_DIR/server.env as the ctest fixture "postgres"
// wrote it, or one a test starts for itself (to crash it
// without disturbing the others), and a database of each test's own on it.
#pragma once

#include <catch2/catch.hpp>
#include <libpq-fe.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "support/scratch_directory.hpp"

#if !defined(BUS_POSTGRES_TEST_SERVER) || !defined(BUS_POSTGRES_TEST_DIR)
#error "BUS_POSTGRES_TEST_SERVER (scripts/postgres-test-server.sh) and BUS_POSTGRES_TEST_DIR (the fixture's) must be defined"
#endif

namespace bus::test {

// The value of `key` in DIR/server.env (quotes taken off); FAILs the test
// if the file or the key is missing.
inline std::string postgres_env(const std::string& dir, const std::string& key) {
  std::string path = dir + "/server.env";
  std::ifstream in(path);
  if (!in)
    FAIL("no " << path << ": the PostgreSQL server did not start (see the test 'postgresql: "
                          "start a throwaway server')");
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos || line.substr(0, eq) != key)
      continue;
    auto value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
      value = value.substr(1, value.size() - 2);
    return value;
  }
  FAIL(path << " has no " << key);
  return {};
}

// A connection of the test's own, as another program (psql) would open.
class pg_reader {
public:
  explicit pg_reader(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    INFO(conninfo);
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
  }
  ~pg_reader() { PQfinish(conn_); }
  pg_reader(const pg_reader&) = delete;
  pg_reader& operator=(const pg_reader&) = delete;

  // The single number `sql` selects.
  [[nodiscard]] long long number(const std::string& sql) const {
    PGresult* r = PQexec(conn_, sql.c_str());
    INFO(sql << ": " << PQerrorMessage(conn_));
    REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
    REQUIRE(PQntuples(r) == 1);
    auto value = std::atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return value;
  }
  void exec(const std::string& sql) const {
    PGresult* r = PQexec(conn_, sql.c_str());
    INFO(sql << ": " << PQerrorMessage(conn_));
    auto status = PQresultStatus(r);
    PQclear(r);
    REQUIRE((status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK));
  }

private:
  PGconn* conn_;
};

// A server: the fixture's (shared by every test), or one of the test's own.
class postgres_server {
public:
  // The fixture's server (started by ctest before the tests that need it).
  postgres_server() : dir_(BUS_POSTGRES_TEST_DIR) {}
  // A server of the test's own, stopped and removed with this object.
  struct own_t {};
  explicit postgres_server(own_t) : own_(std::make_unique<scratch_directory>()) {
    dir_ = own_->file("server");
    auto command = std::string(BUS_POSTGRES_TEST_SERVER) + " start " + dir_ + " >/dev/null";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  ~postgres_server() {
    if (own_)
      (void)std::system((std::string(BUS_POSTGRES_TEST_SERVER) + " stop " + dir_).c_str());
  }
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

  // The connection string of the server's "postgres" database.
  [[nodiscard]] std::string conninfo() const { return postgres_env(dir_, "BUS_POSTGRES_CONNINFO"); }

  // The Unix socket the server listens on (it has no TCP port): a relay's
  // upstream (support/tcp_relay.hpp).
  [[nodiscard]] std::string socket_path() const {
    auto info = conninfo();
    auto word = [&](const std::string& key) {
      auto at = info.find(key + "=");
      REQUIRE(at != std::string::npos);
      auto from = at + key.size() + 1;
      return info.substr(from, info.find(' ', from) - from);
    };
    return word("host") + "/.s.PGSQL." + word("port");
  }

  // Creates a database no other test uses and returns its connection string.
  [[nodiscard]] std::string fresh_database() const {
    static std::atomic<unsigned> counter{0};
    static const auto run = std::to_string(std::random_device{}() % 1000000);
    auto name = "bus_test_" + run + "_" + std::to_string(counter++);
    pg_reader(conninfo()).exec("CREATE DATABASE " + name);
    return conninfo() + " dbname=" + name;
  }

  // Stops the server as a crash would; resume() starts it again on its data.
  void crash() const { REQUIRE(std::system(postgres_env(dir_, "BUS_POSTGRES_CRASH").c_str()) == 0); }
  void resume() const {
    REQUIRE(std::system(postgres_env(dir_, "BUS_POSTGRES_RESUME").c_str()) == 0);
  }

private:
  std::unique_ptr<scratch_directory> own_;
  std::string dir_;
};

} // namespace bus::test
