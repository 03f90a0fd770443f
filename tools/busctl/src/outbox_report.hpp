// What `busctl outbox` prints: the backlog of an outbox store (messages
// handled whose stored sends are not all out yet), per endpoint, as an
// aligned table or one JSON document. Pure: the backlog and `now` in, text
// out; ages are counted from the `now` given, so tests need no clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/message_store.hpp"
#include "bus/time.hpp"

namespace bus::ctl {

// One reading of a store's backlog.
struct outbox_report {
  std::string store;                   // message_store::name(): "sqlite", "postgresql"
  std::optional<std::string> file;     // the SQLite file; none for PostgreSQL, whose
                                       // connection string may hold a password
  std::vector<outbox_backlog> backlog; // as the store returned it: by endpoint name
};

// "0s", "42s", "3m 12s", "1h 2m", "3d 4h": two units at most, which is as
// precise as an operator reads an age. A negative age (the writer's clock
// ahead of this machine's) counts as 0.
[[nodiscard]] std::string age_text(duration age);

// A summary line ("nothing pending" when the backlog is empty), then the
// table: ENDPOINT, MESSAGES, SENDS, OLDEST AGE, OLDEST RECEIVED AT.
[[nodiscard]] std::string outbox_text(const outbox_report& r, time_point now);

// {"store", "file", "messages", "sends", "endpoints": [{"endpoint",
// "messages", "sends", "oldest_received_at", "oldest_age_ms"}]}
[[nodiscard]] nlohmann::json outbox_json(const outbox_report& r, time_point now);

} // namespace bus::ctl
