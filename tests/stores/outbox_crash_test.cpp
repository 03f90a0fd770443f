// The outbox's crash matrix (issue 21): a worker process on a real broker
// and a real SQLite file kills itself with SIGKILL at one step of one
// delivery (outbox_crash_worker.cpp): after the handler's commit and before
// dispatch, after dispatch and before the mark, after the mark and before
// the acknowledgement. A second worker takes over. Afterwards every order
// left its effect exactly once in the handler's own table, every sent
// message reached the receiver and was processed there exactly once, and
// nothing is left in the outbox.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <fstream>
#include <iterator>

#include "broker.hpp"
#include "bus/header_names.hpp"
#include "child_process.hpp"
#include "stores/sqlite_reader.hpp"
#include "support/eventually.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;

namespace {

constexpr int orders = 12;

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::unique_ptr<bus::test::child_process> start_worker(std::vector<std::string> args,
                                                       const std::string& output) {
  return std::make_unique<bus::test::child_process>(
    BUS_OUTBOX_CRASH_WORKER, std::move(args),
    std::vector<std::string>{"BUS_RABBITMQ_URL=" + bus::test::broker_env("BUS_RABBITMQ_URL")},
    output);
}

bus::envelope order_message(int i, const std::string& type) {
  bus::envelope env;
  env.message_id = "m-" + std::to_string(i);
  env.message_type = type;
  env.body = bus::message_body::text(R"({"id":"o-)" + std::to_string(i) + R"("})");
  return env;
}

} // namespace

TEST_CASE("outbox: kill -9 at each step of a delivery leaves every effect once and every send "
          "processed once",
          "[rabbitmq][outbox][crash]") {
  auto step = GENERATE(as<std::string>{}, "after_commit", "after_dispatch", "after_mark");
  DYNAMIC_SECTION("killed " << step) {
    bus::test::scratch_directory dir;
    auto endpoint = bus::test::unique_name("outbox." + step);
    auto type = bus::test::unique_name("order");
    auto db_path = dir.file("bus.db");
    auto output = dir.file("worker.out");
    auto producer = bus::test::connect_transport();
    REQUIRE(producer->declare_queue(endpoint));
    // The receiver's queue too: the worker's first endpoint takes these
    // messages and sends on before its second endpoint has declared it.
    REQUIRE(producer->declare_queue(endpoint + ".next"));
    for (int i = 0; i < orders; ++i)
      REQUIRE(producer->send(endpoint, order_message(i, type)));

    // The fifth delivery to reach the step kills the process.
    auto first = start_worker({endpoint, type, db_path, step, "5"}, output);
    auto status = first->wait(60s);
    INFO("worker output:\n" << file_text(output));
    REQUIRE(status);
    REQUIRE(WIFSIGNALED(*status));
    CHECK(WTERMSIG(*status) == SIGKILL);

    auto second = start_worker({endpoint, type, db_path}, output);
    bus::test::reader db(db_path);
    auto all_done = [&] {
      return db.number("SELECT count(DISTINCT order_id) FROM next_effects") == orders
             && db.number("SELECT count(*) FROM bus_outbox") == 0;
    };
    CHECK(bus::test::eventually(all_done, 60s));
    second->signal(SIGTERM);
    auto stopped = second->wait(60s);
    REQUIRE(stopped);
    INFO("worker output:\n" << file_text(output));
    CHECK(WIFEXITED(*stopped));
    CHECK(WEXITSTATUS(*stopped) == 0); // a sanitizer's report exits otherwise

    CHECK(db.number("SELECT count(*) FROM effects") == orders);
    CHECK(db.number("SELECT count(DISTINCT order_id) FROM effects") == orders);
    CHECK(db.number("SELECT count(*) FROM next_effects") == orders);
    CHECK(db.number("SELECT count(*) FROM bus_outbox") == 0);
    CHECK(db.number("SELECT count(*) FROM bus_inbox WHERE dispatched_at IS NULL") == 0);
    CHECK(db.number("SELECT count(*) FROM bus_inbox") == 2 * orders);
    // What the step left for the second worker to find.
    auto log = file_text(output);
    if (step == "after_commit") // stored, not sent: sent from the rows, the handler not run
      CHECK_THAT(log, Catch::Contains("that did not all go out"));
    else if (step == "after_dispatch") // sent, not marked: sent again, dropped by the receiver
      CHECK_THAT(log, Catch::Contains(endpoint + ".next' already"));
    else // marked, not acknowledged: the copy is dropped by the sender's inbox
      CHECK_THAT(log, Catch::Contains("by endpoint '" + endpoint + "' already (its inbox record)"));
  }
}
