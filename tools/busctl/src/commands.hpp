// busctl from its arguments to its exit code: parse, connect (to the broker,
// or for `outbox` to the database), run the command, print. Separate from main() so tests can drive it with any
// arguments and environment, and read what it printed.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace bus::ctl {

// `args` without the program name; `env_url` is $BUS_RABBITMQ_URL or null,
// `env_ctl` $BUS_RABBITMQ_CTL (the rabbitmqctl move-leader runs) or null.
// Returns the exit code (exit_codes.hpp). Results go to `out` (one JSON
// document with --json, errors included), diagnostics to `err`.
[[nodiscard]] int run(const std::vector<std::string>& args, const char* env_url, std::ostream& out,
                      std::ostream& err, const char* env_ctl = nullptr);

} // namespace bus::ctl
