// The database side of `busctl outbox`: opens the store the command line
// names (--sqlite or --postgres) through the stores' public headers, as a
// bus would, and reads its backlog. No broker is involved.
#pragma once

#include "bus/error.hpp"
#include "command_line.hpp"
#include "outbox_report.hpp"

namespace bus::ctl {

// `cl` names exactly one store (parse_command_line makes sure). Errors:
// errc::invalid_configuration for a connection string that does not parse
// (exit 2); errc::store_failure for a store that cannot be opened or read,
// naming the file or the server but never a password (exit 3). A SQLite
// file that does not exist is refused rather than created, so that a
// mistyped path does not read as an empty outbox. May block (a server's
// connect timeout, a lock held past the busy timeout).
[[nodiscard]] result<outbox_report> read_outbox(const command_line& cl);

} // namespace bus::ctl
