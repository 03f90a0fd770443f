// The operator's story end to end, on a real broker: a bus on RabbitMQ
// dead-letters messages because their handlers fail; busctl lists, groups
// and shows them; the cause is fixed; busctl replays them, the same bus
// handles every one of them, and the error queue is empty.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "bus/bus.hpp"
#include "bus/sample_exceptions.hpp"
#include "busctl_runner.hpp"
#include "support/sample_messages.hpp"

using namespace bus::ctl::test;
using bus::test::invoice_requested;
using bus::test::order_placed;
using nlohmann::json;

namespace {

// The ids of the messages that ended, by how they ended.
struct outcomes {
  std::mutex mutex;
  std::condition_variable changed;
  std::set<std::string> dead_lettered;
  std::set<std::string> handled;

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      std::lock_guard<std::mutex> guard(mutex);
      if (e.kind == bus::event_kind::dead_lettered)
        dead_lettered.insert(e.message_id);
      else if (e.kind == bus::event_kind::handled)
        handled.insert(e.message_id);
      changed.notify_all();
    };
  }

  template <class Condition>
  bool wait(Condition done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return done(*this); });
  }
};

std::set<std::string> ids_in(const json& listing) {
  std::set<std::string> out;
  for (const auto& m : listing.at("messages"))
    out.insert(m.at("id").get<std::string>());
  return out;
}

// A bus on the test broker with one endpoint whose two handlers fail until
// `cause_fixed` is set; once fixed they count the clean replays they see
// (replay count 1, no fault facts, delivery count 0).
struct failing_bus {
  std::string endpoint = bus::test::unique_name("billing");
  std::string order_type = bus::test::unique_name("order_placed");
  std::string invoice_type = bus::test::unique_name("invoice_requested");
  std::atomic<bool> cause_fixed{false};
  std::atomic<int> handled_as_replays{0};
  outcomes ended;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::unique_ptr<bus::message_bus> running;

  failing_bus() {
    cfg.set("scheduler.max-threads", 2);
    sys = std::make_unique<caf::actor_system>(cfg);
    bus::bus_builder b{*sys};
    auto note_replay = [this](const bus::handler_context& ctx) {
      const auto& h = ctx.message().headers;
      auto count = h.find("bus-replay-count");
      if (count && *count == "1" && !h.find(bus::header::fault_exception_type)
          && ctx.message().delivery_count == 0)
        ++handled_as_replays;
    };
    b.transport(bus::test::connect_transport())
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .observe(ended.observer())
      .message<order_placed>(order_type)
      .message<invoice_requested>(invoice_type)
      .add_resilience([](bus::policy_builder& p) {
        p.on_any().retry(1, std::chrono::milliseconds(10)).then_dead_letter();
      })
      .endpoint(endpoint, [this, note_replay](bus::endpoint_builder& e) {
        e.slots(2)
          .handle<order_placed>([this, note_replay](const order_placed& m, bus::handler_context& ctx) {
            if (!cause_fixed)
              throw bus::samples::validation_error(
                "amount", "amount " + std::to_string(m.amount) + " is not allowed");
            note_replay(ctx);
          })
          .handle<invoice_requested>(
            [this, note_replay](const invoice_requested&, bus::handler_context& ctx) {
              if (!cause_fixed)
                throw bus::samples::database_error(true, "connection to the ledger refused");
              note_replay(ctx);
            });
      });
    auto built = b.build();
    REQUIRE(built);
    running = std::move(*built);
    REQUIRE(running->start());
  }

  // Drains what is in flight; at most once.
  void stop() {
    if (!stopped)
      running->stop();
    stopped = true;
  }

  ~failing_bus() { stop(); }

  bool stopped = false;
};

} // namespace

TEST_CASE("busctl lists, groups and shows what a failing bus dead-lettered, and once the cause is fixed its replay is handled and empties the error queue") {
  failing_bus f;
  const auto& endpoint = f.endpoint;
  const auto& order_type = f.order_type;
  const auto& invoice_type = f.invoice_type;
  auto& ended = f.ended;
  auto& running = *f.running;

  // Five messages fail, two ways.
  for (int i = 0; i < 3; ++i)
    REQUIRE(running.send(endpoint, order_placed{"o-" + std::to_string(i), 10.0 + i}));
  for (int i = 0; i < 2; ++i)
    REQUIRE(running.send(endpoint, invoice_requested{"i-" + std::to_string(i), {"line"}}));
  REQUIRE(ended.wait([](outcomes& o) { return o.dead_lettered.size() == 5; }));
  std::set<std::string> failed_ids;
  {
    std::lock_guard<std::mutex> guard(ended.mutex);
    failed_ids = ended.dead_lettered;
  }

  // list: every dead-lettered message, with what failed it.
  auto listing = busctl_json({"list", endpoint});
  CHECK(listing["count"] == 5);
  CHECK(ids_in(listing) == failed_ids);
  for (const auto& m : listing["messages"]) {
    CHECK(m["original_address"] == endpoint);
    CHECK(m["immediate_retries"] == 1);
    CHECK(m["delivery_count"] == 0);
    if (m["message_type"] == order_type) {
      CHECK(m["exception_type"] == "bus::samples::validation_error");
      CHECK_THAT(m["exception_message"].get<std::string>(), Catch::Contains("is not allowed"));
    } else {
      CHECK(m["message_type"] == invoice_type);
      CHECK(m["exception_type"] == "bus::samples::database_error");
    }
  }

  // groups: the operator's first question.
  auto groups = busctl_json({"groups", endpoint});
  REQUIRE(groups["groups"].size() == 2);
  CHECK(groups["groups"][0]["exception_type"] == "bus::samples::validation_error");
  CHECK(groups["groups"][0]["message_type"] == order_type);
  CHECK(groups["groups"][0]["count"] == 3);
  CHECK(groups["groups"][1]["exception_type"] == "bus::samples::database_error");
  CHECK(groups["groups"][1]["message_type"] == invoice_type);
  CHECK(groups["groups"][1]["count"] == 2);
  auto groups_text = run_busctl({"groups", endpoint, "--url", broker_url()});
  REQUIRE(groups_text.code == 0);
  CHECK_THAT(groups_text.out, Catch::Contains("5 messages in 2 groups"));

  // show: one of them, with its headers and body.
  auto first_invoice = groups["groups"][1]["ids"][0].get<std::string>();
  auto shown = busctl_json({"show", endpoint, first_invoice});
  CHECK(shown["id"] == first_invoice);
  CHECK(shown["fault"]["exception_message"] == "connection to the ledger refused");
  CHECK(shown["fault"]["endpoint"] == endpoint);
  CHECK_THAT(json::parse(shown["body"].get<std::string>())["order_id"].get<std::string>(),
             Catch::StartsWith("i-"));

  // Nothing was handled, and looking took nothing away.
  CHECK(busctl_json({"list", endpoint})["count"] == 5);
  {
    std::lock_guard<std::mutex> guard(ended.mutex);
    CHECK(ended.handled.empty());
  }

  // The cause is fixed: replay everything; the same bus handles it all.
  f.cause_fixed = true;
  auto replay = busctl_json({"replay", endpoint, "--all"});
  CHECK(replay["replayed"].size() == 5);
  CHECK(replay["failed"].empty());
  REQUIRE(ended.wait([&](outcomes& o) { return o.handled == failed_ids; }));
  CHECK(f.handled_as_replays == 5);
  CHECK(busctl_json({"list", endpoint})["count"] == 0);
  f.stop();
  auto stats = *running.stats(endpoint);
  CHECK(stats.dead_lettered == 5);
  CHECK(stats.handled == 5);
}

TEST_CASE("a replayed message that fails again gets its whole retry budget, not what was left of it") {
  failing_bus f;
  // A copy as a bus writes it after a long life: 7 failed attempts, the first
  // one long ago, 3 redeliveries. Kept on the replay, this history would
  // dead-letter it at its first new failure (time limit, attempt budget).
  auto old = failed_copy("veteran", f.order_type, "bus::samples::validation_error", f.endpoint);
  REQUIRE(old.headers.find(bus::header::first_failure_at));
  auto broker = bus::test::connect_transport();
  REQUIRE(broker->send(f.endpoint + "_error", old));

  auto replay = busctl_json({"replay", f.endpoint, "veteran"});
  REQUIRE(replay["replayed"].size() == 1);
  REQUIRE(f.ended.wait([](outcomes& o) { return o.dead_lettered.count("veteran") == 1; }));

  // It failed afresh: one immediate retry as the policy says, no redelivery
  // counted, the retries exhausted (not the time limit); and it says it was
  // replayed once.
  auto shown = busctl_json({"show", f.endpoint, "veteran"});
  CHECK(shown["fault"]["immediate_retries"] == 1);
  CHECK(shown["fault"]["delivery_count"] == 0);
  CHECK(shown["fault"]["replay_count"] == 1);
  CHECK_THAT(shown["fault"]["reason"].get<std::string>(), Catch::Contains("retries exhausted after 2 attempts"));
  CHECK_THAT(shown["fault"]["reason"].get<std::string>(), !Catch::Contains("time limit"));
  auto listed = busctl_json({"list", f.endpoint});
  REQUIRE(listed["count"] == 1);
  CHECK(listed["messages"][0]["replay_count"] == 1);
  f.stop();
}

TEST_CASE("busctl lists and replays an endpoint's error queue of a name of its own, given with "
          "--queue, and the bus handles the replay") {
  auto endpoint = bus::test::unique_name("billing");
  auto failures = endpoint + ".failures"; // no _error suffix anywhere
  std::atomic<bool> cause_fixed{false};
  outcomes ended;
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport())
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe(ended.observer())
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .endpoint(endpoint, [&](bus::endpoint_builder& e) {
      e.error_queue(failures).handle<order_placed>([&](const order_placed&) {
        if (!cause_fixed)
          throw bus::samples::validation_error("amount", "not allowed");
      });
    });
  auto built = b.build();
  REQUIRE(built);
  auto& running = **built;
  REQUIRE(running.start());
  auto sent = running.send(endpoint, order_placed{"o-1", 1});
  REQUIRE(sent);
  REQUIRE(ended.wait([](outcomes& o) { return o.dead_lettered.size() == 1; }));

  // The bus put it where the endpoint says; busctl reads it there.
  auto listing = busctl_json({"list", endpoint, "--queue", failures});
  CHECK(listing["queue"] == failures);
  REQUIRE(listing["count"] == 1);
  CHECK(listing["messages"][0]["id"] == *sent);
  CHECK(listing["messages"][0]["original_address"] == endpoint);

  cause_fixed = true;
  auto replay = busctl_json({"replay", endpoint, "--queue", failures, "--all"});
  CHECK(replay["replayed"].size() == 1);
  REQUIRE(ended.wait([&](outcomes& o) { return o.handled.count(*sent) == 1; }));
  CHECK(busctl_json({"list", endpoint, "--queue", failures})["count"] == 0);
  running.stop();
}
