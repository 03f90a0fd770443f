#include "throwaway_broker.hpp"

#include <cstdlib>

#include "bus/rabbitmq_settings.hpp"

namespace bench {

namespace {

// Single-quoted for the shell: the paths come from mktemp and the script's
// own location, but a quote in them must not break the command.
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `name` (BUS_RABBITMQ_URL) from the broker.env the script writes, read
// as the shell reads it (the one reader the tests and tools use too).
std::string url_from(const std::string& dir, const std::string& name) {
  auto value = bus::env_file_value(dir + "/broker.env", name);
  return value ? *value : std::string{};
}

} // namespace

throwaway_broker::throwaway_broker(std::string script, std::string dir, const std::string& log,
                                   shape what)
  : script_(std::move(script)), dir_(std::move(dir)), shape_(what) {
  auto start = shape_ == shape::cluster ? " cluster-start " : " start ";
  auto command = shell_quoted(script_) + start + shell_quoted(dir_) + " >" + shell_quoted(log)
                 + " 2>&1";
  if (std::system(command.c_str()) == 0)
    url_ = url_from(dir_, shape_ == shape::cluster ? "BUS_RABBITMQ_NODE1_URL" : "BUS_RABBITMQ_URL");
}

throwaway_broker::~throwaway_broker() {
  auto stop = shape_ == shape::cluster ? " cluster-stop " : " stop ";
  auto command = shell_quoted(script_) + stop + shell_quoted(dir_) + " >/dev/null 2>&1";
  [[maybe_unused]] auto stopped = std::system(command.c_str());
}

} // namespace bench
