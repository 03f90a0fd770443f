// A failed message is never lost and never loops, even when its error
// queue refuses it. A queue out of reach (for now) costs time: the message
// keeps its slot and is offered again with backoff. A refusal for good
// falls back to minimal headers, then to a local file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/refusing_transport.hpp"
#include "support/sample_messages.hpp"

using bus::test::order_placed;
using bus::test::refusing_transport;

namespace {

// A bus whose billing handler always fails with a long message, on a
// transport that refuses some sends to billing_error. Audit counts the
// fault<order_placed> events raised.
bus::message_bus& start(bus::testing::harness& h, std::shared_ptr<refusing_transport> transport,
                        const std::string& dead_letters, int* faults = nullptr) {
  auto b = h.builder();
  b.transport(transport)
    .dead_letter_directory(dead_letters)
    .message<order_placed>("order_placed")
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>(
        [](const order_placed&) -> void { throw std::runtime_error(std::string(2000, 'x')); });
    });
  if (faults)
    b.endpoint("audit", [faults](bus::endpoint_builder& e) {
      e.handle<bus::fault<order_placed>>([faults](const bus::fault<order_placed>&) { ++*faults; });
    });
  return h.start(b);
}

std::string scratch_directory(const std::string& name) {
  auto dir = (std::filesystem::temp_directory_path() / ("bus-test-" + name)).string();
  std::filesystem::remove_all(dir);
  return dir;
}

} // namespace

TEST_CASE("an error queue that refuses large fault headers gets the message with minimal ones") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_error", 1000);
  auto dir = scratch_directory("minimal");
  auto& bus = start(h, transport, dir);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  CHECK(transport->refused == 1);
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->headers.find(bus::header::fault_exception_type) == std::optional<std::string_view>("std::runtime_error"));
  CHECK(errors[0]->headers.find(bus::header::fault_message) == std::optional<std::string_view>(""));
  CHECK(h.stats("billing").dead_lettered == 1);
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("an error queue that refuses everything leaves the message in the dead-letter file") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_error", 0);
  auto dir = scratch_directory("file");
  auto& bus = start(h, transport, dir);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  CHECK(transport->refused == 2); // full headers, then minimal ones: no loop
  CHECK(h.error_queue("billing").empty());
  CHECK(h.queue("billing").empty());
  CHECK(h.stats("billing").dead_lettered == 1);
  std::ifstream in(dir + "/billing.dead-letters.jsonl");
  std::string line;
  REQUIRE(std::getline(in, line));
  auto j = nlohmann::json::parse(line);
  CHECK(j["headers"]["bus-message-type"] == "order_placed");
  CHECK(j["headers"]["bus-fault-exception-type"] == "std::runtime_error");
  CHECK(nlohmann::json::parse(j["body"].get<std::string>())["order_id"] == "o-1");
  CHECK_FALSE(std::getline(in, line));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a message that can be kept nowhere is held back and tried again later, not in a loop") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_error", 0);
  // A regular file where the directory should be: the file fallback fails too.
  auto dir = scratch_directory("blocked");
  { std::ofstream(dir) << "not a directory"; }
  int faults = 0;
  auto& bus = start(h, transport, dir + "/nested", &faults);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  auto criticals = [&] {
    std::size_t n = 0;
    for (const auto& line : h.log_lines())
      n += line.find("[critical] holding message") != std::string::npos;
    return n;
  };
  CHECK(transport->refused == 2);
  CHECK(criticals() == 1);
  CHECK(faults == 0); // not yet ended
  CHECK(h.stats("billing").pending_redelivery == 1);
  CHECK(h.stats("billing").failed_attempts == 1);

  // 30 s later it comes back and tries the error queue again, without
  // running the handler; the queue still refuses: held back once more.
  h.advance(std::chrono::seconds(30));
  CHECK(transport->refused == 4);
  CHECK(criticals() == 2);
  CHECK(h.stats("billing").failed_attempts == 1);

  // The cause is fixed (the directory can be made): it lands in the file.
  std::filesystem::remove(dir);
  h.advance(std::chrono::seconds(30));
  CHECK(h.stats("billing").dead_lettered == 1);
  CHECK(h.stats("billing").pending_redelivery == 0);
  CHECK(faults == 1); // raised once, as it ended
  std::ifstream in(dir + "/nested/billing.dead-letters.jsonl");
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(nlohmann::json::parse(line)["headers"].count("bus-fault-pending") == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an error queue out of reach keeps the message and its slot and offers it again with "
          "backoff") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_error", 1 << 20);
  transport->out_of_reach = 3;
  auto dir = scratch_directory("out-of-reach");
  int faults = 0;
  auto& bus = start(h, transport, dir, &faults);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  CHECK(transport->refused == 1);
  CHECK(h.stats("billing").in_flight == 1); // kept, unacknowledged
  CHECK(h.stats("billing").dead_lettered == 0);
  CHECK(h.transport().unacked("billing") == 1);

  // Offered again after 1 s, then 2 s; the fourth offer, 4 s later, lands.
  h.advance(std::chrono::seconds(1));
  CHECK(transport->refused == 2);
  h.advance(std::chrono::seconds(2));
  CHECK(transport->refused == 3);
  CHECK(h.error_queue("billing").empty());
  h.advance(std::chrono::seconds(4));
  CHECK(transport->refused == 3);
  REQUIRE(h.error_queue("billing").size() == 1);
  auto s = h.stats("billing");
  CHECK(s.dead_lettered == 1);
  CHECK(s.in_flight == 0);
  CHECK(s.failed_attempts == 1); // the handler ran once: waiting is no new attempt
  CHECK(faults == 1);
  CHECK(h.transport().unacked("billing") == 0);
  CHECK_FALSE(std::filesystem::exists(dir)); // an outage is no reason for the local file
}

TEST_CASE("a skipped queue that refuses backs off instead of returning the message in a loop") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_skipped", 1 << 20);
  transport->out_of_reach = 5;
  auto b = h.builder();
  b.transport(transport)
    .message<order_placed>("order_placed")
    .message<bus::test::invoice_requested>("invoice_requested")
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", bus::test::invoice_requested{"o-1", {}}));
  h.run();
  CHECK(transport->refused == 1);
  CHECK(h.stats("billing").requeued == 0);
  CHECK(h.stats("billing").in_flight == 1);
  h.advance(std::chrono::seconds(1));
  CHECK(transport->refused == 2);
  h.advance(std::chrono::seconds(2 + 4 + 8));
  CHECK(transport->refused == 5);
  h.advance(std::chrono::seconds(16));
  CHECK(h.queue("billing_skipped").size() == 1);
  auto s = h.stats("billing");
  CHECK(s.skipped == 1);
  CHECK(s.requeued == 0);
  CHECK(s.in_flight == 0);
}

TEST_CASE("a skipped queue that refuses a message for good sends it to the error queue, saying "
          "why, instead of backing off for ever") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_skipped", 0);
  auto b = h.builder();
  b.transport(transport)
    .message<order_placed>("order_placed")
    .message<bus::test::invoice_requested>("invoice_requested")
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", bus::test::invoice_requested{"o-1", {}}));
  h.run();
  CHECK(transport->refused == 1); // once: a refusal for good is not tried again
  CHECK(h.queue("billing_skipped").empty());
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_type == "invoice_requested");
  auto reason = errors[0]->headers.find(bus::header::fault_reason);
  REQUIRE(reason);
  CHECK_THAT(std::string(*reason), Catch::Contains("has no handler for 'invoice_requested'")
                                     && Catch::Contains("the skipped queue 'billing_skipped' "
                                                        "refused it"));
  auto s = h.stats("billing");
  CHECK(s.dead_lettered == 1);
  CHECK(s.skipped == 0);
  CHECK(s.in_flight == 0);
  CHECK(h.transport().unacked("billing") == 0);
}

TEST_CASE("a message bound for an error queue out of reach as its endpoint stops keeps its fate: "
          "it comes back marked and goes to the error queue without its handler") {
  bus::testing::harness h;
  auto transport = std::make_shared<refusing_transport>(h.transport(), "billing_error", 1 << 20);
  transport->out_of_reach = 1;
  int runs = 0;
  auto b = h.builder();
  b.transport(transport)
    .message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) { p.on_any().dead_letter(); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&) {
        ++runs;
        // The stop comes while the handler runs (asked from inside it, so
        // that on the test coordinator it lands exactly then).
        h.bus().request_stop();
        throw std::runtime_error("card declined for good");
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  REQUIRE(bus.stopped());
  CHECK(transport->refused == 1);
  CHECK(h.stats("billing").requeued == 0);
  auto back = h.queue("billing");
  REQUIRE(back.size() == 1);
  CHECK(back[0]->headers.find(bus::header::fault_pending).has_value());

  REQUIRE(bus.start());
  h.run();
  CHECK(runs == 1); // its fate was decided: the handler does not run again
  CHECK(h.error_queue("billing").size() == 1);
  auto s = h.stats("billing");
  CHECK(s.dead_lettered == 1);
  CHECK(s.in_flight == 0);
  CHECK(h.transport().unacked("billing") == 0);
}
