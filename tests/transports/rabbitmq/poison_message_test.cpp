// A poison message on a quorum queue: the consumer process crashes on it in
// every delivery (no exception the bus could catch, no ack, no reject), so
// the bus's retries never run and only the broker can stop it. With the
// transport's queue_type=quorum the endpoint queue carries an explicit
// x-delivery-limit and dead-letters to the endpoint's error queue: after
// the first delivery and `limit` redeliveries the message is there, with
// the broker's reason (x-death reason "delivery_limit"), never dropped, and
// the endpoint goes on with its other messages. Runs on a single node.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "broker.hpp"
#include "child_process.hpp"
#include "fault_probe.hpp"
#include "ledger.hpp"
#include "raw_client.hpp"
#include "support/eventually.hpp"
#include "support/file_text.hpp"

using namespace std::chrono_literals;
using bus::test::fault_probe;

namespace {

using bus::test::file_text;

constexpr int delivery_limit = 2;

bus::envelope probe_envelope(const fault_probe& p, const std::string& type,
                             const std::string& endpoint) {
  bus::envelope env;
  env.message_id = p.id;
  env.message_type = type;
  env.sent_at = std::chrono::system_clock::now();
  env.source_address = "poison-message-test";
  env.destination_address = endpoint;
  env.body = bus::message_body::text(nlohmann::json(p).dump());
  return env;
}

std::size_t lines_of(const std::vector<bus::test::ledger_entry>& ledger, const std::string& kind,
                     const std::string& id, int pid = 0) {
  std::size_t n = 0;
  for (const auto& e : ledger)
    if (e.kind == kind && e.id == id && (pid == 0 || e.pid == pid))
      ++n;
  return n;
}

} // namespace

TEST_CASE("a consumer process that crashes on one message again and again ends it on the error "
          "queue through the broker's delivery limit, with the reason delivery_limit",
          "[rabbitmq][bus][poison]") {
  auto endpoint = bus::test::unique_name("poison.billing");
  auto error_queue = endpoint + "_error";
  auto type = bus::test::unique_name("fault_probe");
  std::string dir = "/tmp/bus-poison-XXXXXX";
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  auto ledger_path = dir + "/ledger", output = dir + "/worker.out";
  INFO("worker files in " << dir);
  auto url = bus::test::broker_env("BUS_RABBITMQ_URL")
             + "?queue_type=quorum&delivery_limit=" + std::to_string(delivery_limit);

  // A worker per life: it declares the endpoint's quorum queues, consumes
  // one message at a time, and dies on the poison.
  auto start = [&] {
    return std::make_unique<bus::test::child_process>(
        BUS_FAULT_WORKER, std::vector<std::string>{endpoint, type, ledger_path, "1"},
        std::vector<std::string>{"BUS_RABBITMQ_URL=" + url}, output);
  };
  auto worker = start();
  REQUIRE(bus::test::eventually(
      [&] { return lines_of(bus::test::read_ledger(ledger_path), "ready", "-") == 1; }, 30s));

  fault_probe poison{"poison-1", 0, 0, true};
  fault_probe healthy{"healthy-1", 0, 0, false};
  auto producer = bus::test::connect_transport();
  REQUIRE(producer->send(endpoint, probe_envelope(poison, type, endpoint)));
  REQUIRE(producer->send(endpoint, probe_envelope(healthy, type, endpoint)));

  // Each crash returns the delivery to the broker, which counts it; the
  // test starts the next worker as a supervisor would. Bounded: a broker
  // that never stops the poison fails here.
  auto parked_count = [&] {
    auto n = producer->message_count(error_queue);
    return n ? *n : std::size_t{0};
  };
  int crashes = 0;
  for (;;) {
    bool settled = bus::test::eventually(
        [&] {
          return !worker->running()
                 || (parked_count() == 1
                     && lines_of(bus::test::read_ledger(ledger_path), "handled", healthy.id) == 1);
        },
        30s, 20ms);
    INFO("worker output:\n" << file_text(output));
    REQUIRE(settled);
    if (worker->running())
      break;
    auto status = worker->wait(1s);
    REQUIRE(status);
    REQUIRE(WIFEXITED(*status));
    REQUIRE(WEXITSTATUS(*status) == 3); // the planned crash, not another failure
    ++crashes;
    REQUIRE(crashes <= delivery_limit + 1);
    worker = start();
  }

  auto ledger = bus::test::read_ledger(ledger_path);
  // The first delivery and `delivery_limit` redeliveries, each a crash.
  CHECK(crashes == delivery_limit + 1);
  CHECK(lines_of(ledger, "crash", poison.id) == delivery_limit + 1);
  CHECK(lines_of(ledger, "handled", poison.id) == 0);
  // The endpoint went on: the healthy message was handled once, by a
  // process that never crashed.
  CHECK(lines_of(ledger, "handled", healthy.id) == 1);
  CHECK(lines_of(ledger, "handled", healthy.id, worker->pid()) == 1);

  // The poison is on the error queue, put there by the broker, and says why.
  auto settings = bus::test::test_settings();
  auto parked = bus::test::raw_get(settings, error_queue, /*ack=*/true);
  REQUIRE(parked.found);
  CHECK(parked.message_id == poison.id);
  REQUIRE_FALSE(parked.death_reasons.empty());
  CHECK(parked.death_reasons.front() == "delivery_limit");
  CHECK(parked.death_queues.front() == endpoint);
  CHECK(parked.headers["x-first-death-reason"] == "delivery_limit");
  CHECK(parked.headers["x-first-death-queue"] == endpoint);
  CHECK_FALSE(bus::test::raw_get(settings, error_queue, true).found); // only the poison
  CHECK(producer->message_count(endpoint).value() == 0);

  worker->signal(SIGTERM);
  auto stopped = worker->wait(30s);
  REQUIRE(stopped);
  CHECK(WIFEXITED(*stopped));
  CHECK(WEXITSTATUS(*stopped) == 0);
  std::filesystem::remove_all(dir);
}
