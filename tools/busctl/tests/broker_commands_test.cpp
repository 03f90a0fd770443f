// busctl's commands on a real broker, on error queues seeded with the
// copies the bus writes there: browsing leaves everything in place, replay
// and purge act on exactly the selection, and replay never loses a message.
#include <catch2/catch.hpp>

#include "busctl_runner.hpp"
#include "support/delivery_collector.hpp"
#include "support/envelope_text.hpp"

#include <algorithm>

using namespace bus::ctl::test;
using bus::test::unique_name;
using nlohmann::json;

namespace {

using bus::test::header_or_missing;

struct seeded_endpoint {
  std::shared_ptr<bus::rabbitmq_transport> broker = bus::test::connect_transport();
  std::string endpoint = unique_name("billing");
  std::string error_queue = endpoint + "_error";

  seeded_endpoint() {
    REQUIRE(broker->declare_queue(endpoint));
    REQUIRE(broker->declare_queue(error_queue));
  }

  void fail(const std::string& id, const std::string& type = "order_placed",
            const std::string& exception = "std::out_of_range") {
    fail_to(id, endpoint, type, exception);
  }

  void fail_to(const std::string& id, const std::string& original_address,
               const std::string& type = "order_placed",
               const std::string& exception = "std::out_of_range") {
    REQUIRE(broker->send(error_queue, failed_copy(id, type, exception, original_address)));
  }

  std::size_t depth(const std::string& queue) {
    auto n = broker->message_count(queue);
    REQUIRE(n);
    return *n;
  }
};

} // namespace

TEST_CASE("busctl list shows every message with its fault facts and leaves the queue as it was") {
  seeded_endpoint q;
  q.fail("m-1");
  q.fail("m-2", "invoice_requested", "db_error");
  q.fail("m-3");

  auto first = busctl_json({"list", q.endpoint});
  CHECK(first["queue"] == q.error_queue);
  CHECK(first["count"] == 3);
  CHECK(ids_of(first) == std::vector<std::string>{"m-1", "m-2", "m-3"});
  const auto& m2 = first["messages"][1];
  CHECK(m2["message_type"] == "invoice_requested");
  CHECK(m2["exception_type"] == "db_error");
  CHECK(m2["exception_message"] == "it failed");
  CHECK(m2["immediate_retries"] == 2);
  CHECK(m2["delivery_count"] == 3);
  CHECK(m2["original_address"] == q.endpoint);
  CHECK_FALSE(m2["failed_at"].get<std::string>().empty());

  // Nothing was taken away, and a second look sees the same order.
  CHECK(q.depth(q.error_queue) == 3);
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == ids_of(first));

  auto text = run_busctl({"list", q.endpoint, "--url", broker_url()});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::StartsWith("queue '" + q.error_queue + "': 3 messages\n"));
  CHECK_THAT(text.out, Catch::Contains("MESSAGE ID"));
  CHECK_THAT(text.out, Catch::Contains("db_error"));
}

TEST_CASE("busctl groups counts by exception type and message type, largest first") {
  seeded_endpoint q;
  q.fail("a");
  q.fail("b", "invoice_requested", "db_error");
  q.fail("c");
  q.fail("d", "invoice_requested");

  auto doc = busctl_json({"groups", q.endpoint});
  CHECK(doc["count"] == 4);
  REQUIRE(doc["groups"].size() == 3);
  CHECK(doc["groups"][0]["exception_type"] == "std::out_of_range");
  CHECK(doc["groups"][0]["message_type"] == "order_placed");
  CHECK(doc["groups"][0]["count"] == 2);
  CHECK(doc["groups"][0]["ids"] == json({"a", "c"}));
  CHECK(doc["groups"][1]["exception_type"] == "db_error");
  CHECK(doc["groups"][2]["message_type"] == "invoice_requested");
  CHECK(q.depth(q.error_queue) == 4);
}

TEST_CASE("busctl show prints one message with its headers and body") {
  seeded_endpoint q;
  q.fail("m-1");
  q.fail("m-2");

  auto doc = busctl_json({"show", q.endpoint, "m-2"});
  CHECK(doc["id"] == "m-2");
  CHECK(doc["position"] == 2);
  CHECK(doc["fault"]["exception_type"] == "std::out_of_range");
  CHECK(json::parse(doc["body"].get<std::string>())["order_id"] == "m-2");
  bool has_tenant = false;
  for (const auto& h : doc["headers"])
    has_tenant = has_tenant || (h["name"] == "tenant" && h["value"] == "acme");
  CHECK(has_tenant);
  CHECK(doc["properties"]["content_type"] == "application/json");

  auto text = run_busctl({"show", q.endpoint, "m-1", "--url", broker_url()});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("bus-fault-exception-type"));
  CHECK_THAT(text.out, Catch::Contains("\"order_id\": \"m-1\""));
  CHECK(q.depth(q.error_queue) == 2);
}

TEST_CASE("busctl replay of one id sends only that message back, without fault facts and with a fresh count") {
  seeded_endpoint q;
  q.fail("m-1");
  q.fail("m-2");
  q.fail("m-3");

  auto doc = busctl_json({"replay", q.endpoint, "m-2"});
  REQUIRE(doc["replayed"].size() == 1);
  CHECK(doc["replayed"][0]["id"] == "m-2");
  CHECK(doc["replayed"][0]["destination"] == q.endpoint);
  CHECK(doc["failed"].empty());
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == std::vector<std::string>{"m-1", "m-3"});

  bus::test::delivery_collector arrived;
  REQUIRE(q.broker->consume(q.endpoint, 10, arrived.handler()));
  REQUIRE(arrived.wait_for(1));
  const auto& m = *arrived.items().at(0).message;
  namespace h = bus::header;
  CHECK(m.message_id == "m-2");
  CHECK(m.message_type == "order_placed");
  CHECK(json::parse(*m.body.to_json_text())["order_id"] == "m-2");
  CHECK(m.delivery_count == 0);
  CHECK(header_or_missing(m, h::failed_attempts) == "<missing>");
  CHECK(header_or_missing(m, h::first_failure_at) == "<missing>");
  for (auto name : {h::fault_exception_type, h::fault_message, h::fault_at, h::fault_original_address,
                    h::fault_delivery_count, h::fault_immediate_retries, h::fault_reason})
    CHECK(header_or_missing(m, name) == "<missing>");
  CHECK(header_or_missing(m, "tenant") == "acme");
  CHECK(header_or_missing(m, "bus-replay-count") == "1");
  CHECK(header_or_missing(m, "bus-replayed-from") == q.error_queue);
  CHECK(header_or_missing(m, "bus-replayed-at") != "<missing>");
  for (const auto& d : arrived.items())
    CHECK(q.broker->ack(d.tag));
  CHECK(arrived.size() == 1);
}

TEST_CASE("busctl replay of a group sends that group back and leaves the others in order") {
  seeded_endpoint q;
  q.fail("a");
  q.fail("b", "invoice_requested", "db_error");
  q.fail("c", "order_placed", "db_error");
  q.fail("d", "invoice_requested", "db_error");

  auto doc = busctl_json(
    {"replay", q.endpoint, "--exception-type", "db_error", "--message-type", "invoice_requested"});
  REQUIRE(doc["replayed"].size() == 2);
  CHECK(doc["replayed"][0]["id"] == "b");
  CHECK(doc["replayed"][1]["id"] == "d");
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == std::vector<std::string>{"a", "c"});
  CHECK(eventually([&] { return q.depth(q.endpoint) == 2; }, std::chrono::seconds(20)));

  auto all = busctl_json({"replay", q.endpoint, "--all"});
  CHECK(all["replayed"].size() == 2);
  CHECK(busctl_json({"list", q.endpoint})["count"] == 0);
  CHECK(eventually([&] { return q.depth(q.endpoint) == 4; }, std::chrono::seconds(20)));
}

TEST_CASE("busctl replay to a queue that no longer exists keeps the message on the error queue") {
  seeded_endpoint q;
  auto gone = unique_name("deleted-endpoint");
  q.fail("kept", "order_placed", "std::out_of_range");
  q.fail_to("lost-destination", gone);

  auto r = run_busctl({"replay", q.endpoint, "--all", "--json", "--url", broker_url()});
  CHECK(r.code == 5);
  auto doc = r.json();
  REQUIRE(doc["failed"].size() == 1);
  CHECK(doc["failed"][0]["id"] == "lost-destination");
  CHECK(doc["failed"][0]["destination"] == gone);
  CHECK_THAT(doc["failed"][0]["problem"].get<std::string>(), Catch::Contains("NO_ROUTE"));
  CHECK(doc["replayed"].size() == 1);
  CHECK_THAT(r.err, Catch::Contains("not replayed: lost-destination"));
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == std::vector<std::string>{"lost-destination"});
}

TEST_CASE("busctl replay keeps a message read from a stream out of the stream, and --to sends it "
          "to a queue") {
  seeded_endpoint q;
  auto stream = unique_name("audit");
  REQUIRE(q.broker->declare_stream(stream, {}));
  auto from_stream = bus::ctl::test::failed_copy("s-1", "order_placed", "db_error", stream);
  from_stream.headers.set(bus::header::fault_stream_offset, "41");
  REQUIRE(q.broker->send(q.error_queue, from_stream));

  // Back into the stream it would be appended for every reader: refused,
  // and the message stays where it is.
  auto refused = run_busctl({"replay", q.endpoint, "--all", "--json", "--url", broker_url()});
  CHECK(refused.code == 5);
  auto doc = refused.json();
  CHECK(doc["replayed"].empty());
  REQUIRE(doc["failed"].size() == 1);
  CHECK(doc["failed"][0]["id"] == "s-1");
  CHECK_THAT(doc["failed"][0]["problem"].get<std::string>(),
             Catch::Contains("read from stream '" + stream + "' at offset 41"));
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == std::vector<std::string>{"s-1"});

  auto fixes = unique_name("audit-fixes");
  REQUIRE(q.broker->declare_queue(fixes));
  auto sent = busctl_json({"replay", q.endpoint, "--all", "--to", fixes});
  REQUIRE(sent["replayed"].size() == 1);
  CHECK(sent["replayed"][0]["destination"] == fixes);
  CHECK(busctl_json({"list", q.endpoint})["count"] == 0);
  CHECK(eventually([&] { return q.depth(fixes) == 1; }, std::chrono::seconds(20)));
}

TEST_CASE("busctl purge deletes one id, then a group, then everything, and says when nothing matched") {
  seeded_endpoint q;
  q.fail("a");
  q.fail("b", "invoice_requested", "db_error");
  q.fail("c");
  q.fail("d", "invoice_requested", "db_error");
  q.fail("e");

  auto one = busctl_json({"purge", q.endpoint, "c"});
  CHECK(one["purged"] == 1);
  CHECK(one["ids"] == json({"c"}));
  auto group = busctl_json({"purge", q.endpoint, "--exception-type", "db_error"});
  CHECK(group["purged"] == 2);
  CHECK(ids_of(busctl_json({"list", q.endpoint})) == std::vector<std::string>{"a", "e"});
  auto all = busctl_json({"purge", q.endpoint, "--all"});
  CHECK(all["purged"] == 2);
  CHECK(q.depth(q.error_queue) == 0);
  CHECK(q.depth(q.endpoint) == 0); // purged, not replayed

  auto again = run_busctl({"purge", q.endpoint, "--all", "--url", broker_url()});
  CHECK(again.code == 1);
  CHECK_THAT(again.err, Catch::Contains("matched no message"));
}

TEST_CASE("busctl reads another queue with --queue, such as a skipped queue, and stops at --limit") {
  seeded_endpoint q;
  auto skipped = q.endpoint + "_skipped";
  REQUIRE(q.broker->declare_queue(skipped));
  for (auto id : {"s-1", "s-2", "s-3"}) {
    bus::envelope e;
    e.message_id = id;
    e.message_type = "unknown_type";
    e.body = bus::message_body::text("{}");
    REQUIRE(q.broker->send(skipped, e));
  }
  auto limited = busctl_json({"list", q.endpoint, "--queue", skipped, "--limit", "2"});
  CHECK(limited["queue"] == skipped);
  CHECK(ids_of(limited) == std::vector<std::string>{"s-1", "s-2"});
  CHECK(limited["truncated"] == true);
  // Without an original address a replay goes to the endpoint's queue.
  auto replayed = busctl_json({"replay", q.endpoint, "--queue", skipped, "s-3"});
  CHECK(replayed["replayed"][0]["destination"] == q.endpoint);
  CHECK(q.depth(skipped) == 2);
  CHECK(eventually([&] { return q.depth(q.endpoint) == 1; }, std::chrono::seconds(20)));
}

TEST_CASE("busctl reads, replays and purges a quorum error queue, whose order reading may rotate") {
  auto settings = bus::test::test_settings();
  settings.queue_type = bus::rabbitmq_queue_type::quorum;
  auto broker = bus::test::connect_transport(settings);
  auto endpoint = unique_name("billing-quorum");
  REQUIRE(broker->declare_queue(endpoint));
  REQUIRE(broker->declare_queue(endpoint + "_error"));
  for (auto id : {"q-1", "q-2", "q-3"})
    REQUIRE(broker->send(endpoint + "_error", failed_copy(id, "order_placed", "db_error", endpoint)));

  auto first = busctl_json({"list", endpoint});
  CHECK(ids_of(first) == std::vector<std::string>{"q-1", "q-2", "q-3"});
  // Given back, the messages went behind each other in the same order: the
  // set stays, and each now counts a delivery of the broker's own.
  auto second = busctl_json({"list", endpoint});
  CHECK(second["count"] == 3);
  auto shown = busctl_json({"show", endpoint, "q-2"});
  bool counted = false;
  for (const auto& h : shown["headers"])
    counted = counted || h["name"] == "x-delivery-count";
  CHECK(counted);

  auto replay = busctl_json({"replay", endpoint, "q-2"});
  CHECK(replay["replayed"].size() == 1);
  auto left = ids_of(busctl_json({"list", endpoint}));
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"q-1", "q-3"});
  CHECK(eventually([&] { return *broker->message_count(endpoint) == 1; },
                   std::chrono::seconds(20)));
  CHECK(busctl_json({"purge", endpoint, "--all"})["purged"] == 2);
}

TEST_CASE("a quorum error queue read past the delivery limit keeps its messages as they are") {
  auto settings = bus::test::test_settings();
  settings.queue_type = bus::rabbitmq_queue_type::quorum;
  settings.delivery_limit = 2;
  auto broker = bus::test::connect_transport(settings);
  auto endpoint = unique_name("billing-reads");
  REQUIRE(broker->declare_queue(endpoint));
  REQUIRE(broker->declare_queue(endpoint + "_error"));
  REQUIRE(broker->send(endpoint + "_error", failed_copy("r-1", "order_placed", "db_error", endpoint)));

  for (int read = 0; read < 5; ++read) // each gives the message back: a delivery to the broker
    REQUIRE(busctl_json({"list", endpoint})["count"] == 1);
  auto shown = busctl_json({"show", endpoint, "r-1"});
  std::vector<std::string> dead_lettered; // what a dead-letter into itself would add
  for (const auto& h : shown["headers"])
    if (h["name"] == "x-death" || h["name"] == "x-first-death-reason")
      dead_lettered.push_back(h["name"]);
  CHECK(dead_lettered.empty());
  // busctl gives what it read back as its connection closes; the broker
  // requeues it a moment later (a look at once saw 0).
  CHECK(eventually([&] { return *broker->message_count(endpoint + "_error") == 1; },
                   std::chrono::seconds(20)));
}

TEST_CASE("busctl says when consumers hold messages of the queue it reads, which it cannot see") {
  seeded_endpoint q;
  q.fail("held-1");
  q.fail("held-2");
  auto holder = bus::test::connect_transport();
  bus::test::delivery_collector held;
  REQUIRE(holder->consume(q.error_queue, 10, held.handler()));
  REQUIRE(held.wait_for(2)); // delivered, never acknowledged

  auto r = run_busctl({"list", q.endpoint, "--json", "--url", broker_url()});
  REQUIRE(r.code == 0);
  CHECK(r.json()["count"] == 0);
  CHECK(r.json()["consumers"] == 1);
  CHECK_THAT(r.err, Catch::Contains("1 consumer is attached to '" + q.error_queue + "'"));
  holder->cancel(q.error_queue);
}
