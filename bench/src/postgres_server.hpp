// The PostgreSQL server of the outbox cases, started only while they run
// (scripts/postgres-test-server.sh: its own data directory and unix
// socket, no TCP port), as the RabbitMQ node is for its cases: a server on
// the same two cores must not take CPU from the other cases.
#pragma once

#include <string>

namespace bench {

class throwaway_postgres {
public:
  // Starts a server in `dir` with `script`, its output in `log`. Check
  // conninfo(): empty if it did not start.
  throwaway_postgres(std::string script, std::string dir, const std::string& log);
  ~throwaway_postgres(); // stops the server and removes `dir`, if it started
  throwaway_postgres(const throwaway_postgres&) = delete;
  throwaway_postgres& operator=(const throwaway_postgres&) = delete;

  // A libpq connection string for the server's "postgres" database as its
  // superuser (BUS_POSTGRES_CONNINFO of the script's server.env).
  [[nodiscard]] const std::string& conninfo() const noexcept { return conninfo_; }

private:
  std::string script_;
  std::string dir_;
  std::string conninfo_;
};

} // namespace bench
