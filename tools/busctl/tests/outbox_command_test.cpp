// `busctl outbox` end to end on real SQLite files, through bus::ctl::run
// as main() calls it, with BUS_RABBITMQ_URL unset: records are left in the
// store through its port as a bus leaves them (committed, some not yet
// dispatched), then busctl reads them back. No broker.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bus/sqlite_store.hpp"
#include "commands.hpp"
#include "support/scratch_directory.hpp"
#include "text_lines.hpp"

using namespace std::chrono_literals;

namespace {

using bus::ctl::test::lines_of;

struct busctl_run {
  int code = -1;
  std::string out;
  std::string err;
};

// busctl ARGS, with no broker setting at all.
busctl_run busctl(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  busctl_run r;
  r.code = bus::ctl::run(args, /*env_url=*/nullptr, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A SQLite store with records as a bus leaves them, handled at `at`.
class store_file {
public:
  explicit store_file(std::string path) : path_(std::move(path)) {
    auto store = bus::sqlite_store::open({path_});
    REQUIRE(store);
    store_ = std::move(*store);
  }

  // Committed with its sends stored, and not marked dispatched: pending.
  void stored(const std::string& endpoint, const std::string& id, bus::time_point at,
              const std::vector<std::string>& sends) {
    auto entry = store_->receive({endpoint, id}, at);
    REQUIRE(entry);
    REQUIRE(entry->state == bus::inbox_state::first);
    REQUIRE(entry->transaction->commit(sends));
  }

  // Committed, and every send out: no longer pending.
  void dispatched(const std::string& endpoint, const std::string& id, bus::time_point at) {
    stored(endpoint, id, at, {"record"});
    REQUIRE(store_->mark_dispatched({endpoint, id}, at));
  }

  // What busctl reads is then on the file alone, not in this process's store.
  void close() { store_.reset(); }

private:
  std::string path_;
  std::shared_ptr<bus::sqlite_store> store_;
};

} // namespace

TEST_CASE("busctl outbox shows, per endpoint, the messages whose stored sends are not all out, "
          "without a broker") {
  bus::test::scratch_directory dir;
  auto path = dir.file("orders.db");
  auto now = std::chrono::system_clock::now();
  store_file f(path);
  f.stored("billing", "m-1", now - 1h - 2min, {"record1", "record2"});
  f.stored("billing", "m-2", now - 30s, {"record3"});
  f.dispatched("billing", "m-3", now - 2h); // older, but out: not pending
  f.stored("shipping", "m-1", now - 5min, {"record4"});
  f.close();

  auto r = busctl({"outbox", "--sqlite", path});
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0]
        == "outbox of sqlite '" + path + "': 3 messages pending (4 stored sends) on 2 endpoints");
  CHECK_THAT(lines[1], Catch::Matches("ENDPOINT +MESSAGES +SENDS +OLDEST AGE +OLDEST RECEIVED AT"));
  // The test runs in well under a minute, so the ages are as left.
  CHECK_THAT(lines[2], Catch::Matches("billing +2 +3 +1h 2m +\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z"));
  CHECK_THAT(lines[3], Catch::Matches("shipping +1 +1 +5m +\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z"));

  auto json = busctl({"outbox", "--json", "--sqlite", path});
  REQUIRE(json.code == 0);
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["store"] == "sqlite");
  CHECK(doc["file"] == path);
  CHECK(doc["messages"] == 3);
  CHECK(doc["sends"] == 4);
  REQUIRE(doc["endpoints"].size() == 2);
  CHECK(doc["endpoints"][0]["endpoint"] == "billing");
  CHECK(doc["endpoints"][0]["oldest_received_at"] == bus::to_iso8601(now - 1h - 2min));
  auto age = doc["endpoints"][0]["oldest_age_ms"].get<long long>();
  CHECK(age >= std::chrono::duration_cast<std::chrono::milliseconds>(1h + 2min).count() - 1);
  CHECK(age < std::chrono::duration_cast<std::chrono::milliseconds>(1h + 3min).count());
  CHECK(doc["endpoints"][1]["endpoint"] == "shipping");
  CHECK(doc["endpoints"][1]["messages"] == 1);
}

TEST_CASE("busctl outbox says nothing is pending once every stored send went out") {
  bus::test::scratch_directory dir;
  auto path = dir.file("orders.db");
  auto now = std::chrono::system_clock::now();
  store_file f(path);
  f.dispatched("billing", "m-1", now - 1min);
  f.stored("billing", "m-2", now, {}); // nothing to send: done at its commit
  f.close();

  auto r = busctl({"outbox", "--sqlite", path});
  CHECK(r.code == 0);
  CHECK(r.out == "outbox of sqlite '" + path + "': nothing pending\n");

  auto json = busctl({"outbox", "--sqlite", path, "--json"});
  CHECK(json.code == 0);
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["messages"] == 0);
  CHECK(doc["endpoints"] == nlohmann::json::array());
}

TEST_CASE("busctl outbox exits 3 naming a SQLite file it cannot open, and creates none") {
  bus::test::scratch_directory dir;
  SECTION("a file that does not exist") {
    auto path = dir.file("typo.db");
    auto r = busctl({"outbox", "--sqlite", path});
    CHECK(r.code == 3);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("sqlite '" + path + "': no such file"));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("a file that is not a database, with --json") {
    auto path = dir.file("notes.txt");
    std::ofstream(path) << "not a database, but long enough to look like a header of one\n";
    auto r = busctl({"outbox", "--sqlite", path, "--json"});
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Catch::Contains("sqlite '" + path + "'"));
    CHECK_THAT(r.err, Catch::Contains("not a database"));
    auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["error"]["exit_code"] == 3);
    CHECK_THAT(doc["error"]["message"].get<std::string>(), Catch::Contains(path));
  }
}

TEST_CASE("busctl outbox exits 2 without a store or with two, and opens neither") {
  bus::test::scratch_directory dir;
  auto none = busctl({"outbox"});
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("--sqlite FILE or --postgres CONNINFO"));

  auto path = dir.file("bus.db");
  auto both = busctl({"outbox", "--sqlite", path, "--postgres", "host=db", "--json"});
  CHECK(both.code == 2);
  CHECK(nlohmann::json::parse(both.out)["error"]["exit_code"] == 2);
  CHECK_FALSE(std::filesystem::exists(path));
}
