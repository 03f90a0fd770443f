#include "postgres_server.hpp"

#include <cstdlib>
#include <fstream>

namespace bench {

namespace {

// Single-quoted for the shell, as throwaway_broker does: a quote in a path
// must not break the command.
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// BUS_POSTGRES_CONNINFO from the server.env the script writes (one
// KEY='value' line each).
std::string conninfo_from(const std::string& dir) {
  std::ifstream env(dir + "/server.env");
  const std::string key = "BUS_POSTGRES_CONNINFO=";
  for (std::string line; std::getline(env, line);)
    if (line.rfind(key, 0) == 0) {
      auto value = line.substr(key.size());
      if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"'))
        value = value.substr(1, value.size() - 2);
      return value;
    }
  return {};
}

} // namespace

throwaway_postgres::throwaway_postgres(std::string script, std::string dir, const std::string& log)
    : script_(std::move(script)), dir_(std::move(dir)) {
  auto command =
      shell_quoted(script_) + " start " + shell_quoted(dir_) + " >" + shell_quoted(log) + " 2>&1";
  if (std::system(command.c_str()) == 0)
    conninfo_ = conninfo_from(dir_);
}

throwaway_postgres::~throwaway_postgres() {
  auto command = shell_quoted(script_) + " stop " + shell_quoted(dir_) + " >/dev/null 2>&1";
  [[maybe_unused]] auto stopped = std::system(command.c_str());
}

} // namespace bench
