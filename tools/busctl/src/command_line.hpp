// busctl's command line, parsed into a value: the command, the endpoint and
// queue it reads (or the outbox store), what it selects, how it connects and
// prints. Pure (no
// environment, no files), so every rule is unit-tested; a mistake is an
// errc::invalid_configuration naming every problem at once (exit code 2).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "bus/error.hpp"
#include "selection.hpp"

namespace bus::ctl {

enum class command_kind { help, list, groups, show, replay, purge, move_leader, outbox };

struct command_line {
  command_kind command = command_kind::help;
  std::string endpoint;
  std::string queue;                   // --queue, else "<endpoint>_error"; move-leader: its QUEUE
  std::string vhost = "/";             // move-leader: --vhost
  std::optional<std::string> url;      // --url
  std::optional<std::string> url_file; // --url-file
  bool json = false;
  // --limit: look at no more than this many messages from the head of the
  // queue (0: all of them).
  std::size_t limit = 0;
  std::string message_id;            // show
  std::optional<selector> selection; // replay, purge
  // replay --to: where every selected message goes, instead of its original
  // queue (the way back for a message read from a stream).
  std::optional<std::string> replay_to;
  // outbox: exactly one of them, the store it reads (no broker involved).
  std::optional<std::string> sqlite;   // --sqlite FILE
  std::optional<std::string> postgres; // --postgres CONNINFO
};

// `args` without the program name.
[[nodiscard]] result<command_line> parse_command_line(const std::vector<std::string>& args);

// The text of `busctl --help`.
[[nodiscard]] std::string usage_text();

} // namespace bus::ctl
