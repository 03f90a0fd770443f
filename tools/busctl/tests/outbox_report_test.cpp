// What `busctl outbox` prints, from a backlog and a fixed `now`: the age
// of each endpoint's oldest pending message, the table, the line for an
// empty backlog, and the JSON document.
#include <catch2/catch.hpp>

#include <chrono>

#include "outbox_report.hpp"

using namespace bus::ctl;
using namespace std::chrono_literals;

namespace {

// 2026-11-22T18:00:00Z: a round time, so the table's timestamps read plainly.
const bus::time_point now = bus::from_unix_ms(1'795'370'400'000);

outbox_report two_endpoints() {
  return outbox_report{"sqlite",
                       "/var/lib/orders/bus.db",
                       {{"billing", 2, 3, now - 1h - 2min - 5s}, {"shipping", 1, 1, now - 250ms}}};
}

} // namespace

TEST_CASE("an age reads in its two largest units, from seconds to days") {
  CHECK(age_text(0ms) == "0s");
  CHECK(age_text(999ms) == "0s");
  CHECK(age_text(42s) == "42s");
  CHECK(age_text(3min) == "3m");
  CHECK(age_text(3min + 12s) == "3m 12s");
  CHECK(age_text(1h + 2min + 59s) == "1h 2m");
  CHECK(age_text(24h * 3 + 4h + 5min) == "3d 4h");
}

TEST_CASE("an age from a writer whose clock is ahead counts as none") {
  CHECK(age_text(-5s) == "0s");
  outbox_report r{"sqlite", "bus.db", {{"billing", 1, 1, now + 10s}}};
  CHECK(outbox_json(r, now)["endpoints"][0]["oldest_age_ms"] == 0);
}

TEST_CASE("the backlog prints a total, then one aligned row per endpoint with its oldest's age") {
  CHECK(outbox_text(two_endpoints(), now)
        == "outbox of sqlite '/var/lib/orders/bus.db': 3 messages pending (4 stored sends) on 2 "
           "endpoints\n"
           "ENDPOINT  MESSAGES  SENDS  OLDEST AGE  OLDEST RECEIVED AT\n"
           "billing   2         3      1h 2m       2026-11-22T16:57:55.000Z\n"
           "shipping  1         1      0s          2026-11-22T17:59:59.750Z\n");
}

TEST_CASE("an empty backlog is one line that says nothing is pending, without a table") {
  CHECK(outbox_text({"sqlite", "bus.db", {}}, now)
        == "outbox of sqlite 'bus.db': nothing pending\n");
  // No file for PostgreSQL: its connection string may carry a password.
  CHECK(outbox_text({"postgresql", std::nullopt, {}}, now)
        == "outbox of postgresql: nothing pending\n");
}

TEST_CASE("outbox --json is one document with the totals and every endpoint's backlog") {
  auto doc = outbox_json(two_endpoints(), now);
  CHECK(doc["store"] == "sqlite");
  CHECK(doc["file"] == "/var/lib/orders/bus.db");
  CHECK(doc["messages"] == 3);
  CHECK(doc["sends"] == 4);
  REQUIRE(doc["endpoints"].size() == 2);
  CHECK(doc["endpoints"][0]
        == nlohmann::json{{"endpoint", "billing"},
                          {"messages", 2},
                          {"sends", 3},
                          {"oldest_received_at", "2026-11-22T16:57:55.000Z"},
                          {"oldest_age_ms", 3'725'000}});
  CHECK(doc["endpoints"][1]["oldest_age_ms"] == 250);

  auto empty = outbox_json({"postgresql", std::nullopt, {}}, now);
  CHECK(empty["file"].is_null());
  CHECK(empty["messages"] == 0);
  CHECK(empty["endpoints"] == nlohmann::json::array());
}
