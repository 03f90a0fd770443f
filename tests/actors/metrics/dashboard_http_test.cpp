// The bus's page over real HTTP (curl): its live state, its failed messages
// grouped, and the writes (replay, purge) that only a POST with the token
// may make. The browser's view of the same page is tests/dashboard/.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "scrape.hpp"
#include "support/eventually.hpp"
#include "support/real_threads_bus.hpp"
#include "support/scratch_directory.hpp"

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct payments_down : std::runtime_error {
  payments_down() : std::runtime_error("payments api unreachable") {}
};

// A bus whose billing endpoint sends every failure to its error queue at
// once while `declining`, and whose refunds endpoint trips the payments
// breaker (it stays open for the test).
struct failing_bus {
  bus::test::real_threads_bus rig;
  std::atomic<bool> declining{true};
  std::atomic<int> billed{0};
  std::unique_ptr<bus::message_bus> bus;
  std::string address;

  explicit failing_bus(const std::string& token) {
    auto b = rig.builder();
    b.metrics("127.0.0.1:0");
    if (!token.empty())
      b.dashboard_token(token);
    bus::dependency_breaker_settings payments;
    payments.consecutive_failures = 2;
    payments.open_wait = 1h;
    b.dependency("payments", payments);
    b.endpoint("billing", [&](bus::endpoint_builder& e) {
      e.add_resilience([](bus::policy_builder& p) { p.on_any().dead_letter(); })
        .handle<bus::test::order_placed>([this](const bus::test::order_placed&) {
          if (declining)
            throw std::runtime_error("card declined");
          ++billed;
        });
    });
    b.endpoint("refunds", [&](bus::endpoint_builder& e) {
      e.add_resilience([](bus::policy_builder& p) { p.on<payments_down>().trips("payments"); })
        .handle<bus::test::invoice_requested>(
          [](const bus::test::invoice_requested&) { throw payments_down(); });
    });
    bus = rig.build(b);
    address = bus->metrics_address();
    REQUIRE(bus->start());
  }

  // Sends n orders and waits until all n are on the error queue.
  void fail_orders(int n) {
    auto before = bus->stats("billing")->dead_lettered;
    for (int i = 0; i < n; ++i)
      REQUIRE(bus->send("billing", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
    REQUIRE(bus::test::eventually(
      [&] { return bus->stats("billing")->dead_lettered == before + std::uint64_t(n); }, 10s));
  }

  json get(const std::string& path) const {
    auto a = bus::test::http_get(address, path);
    REQUIRE(a.status == 200);
    return json::parse(a.body);
  }
};

const std::string group_body =
  R"({"queue":"billing_error","endpoint":"billing","exception_type":"std::runtime_error"})";

} // namespace

TEST_CASE("the page serves its HTML and the bus's live state: endpoints, counters, breakers",
          "[dashboard][http]") {
  failing_bus f("");
  f.fail_orders(3);
  for (int i = 0; i < 2; ++i)
    REQUIRE(f.bus->send("refunds", bus::test::invoice_requested{"r-" + std::to_string(i), {}}));

  auto page = bus::test::http_get(f.address, "/");
  CHECK(page.status == 200);
  CHECK(page.body.find("<table id=\"endpoints\">") != std::string::npos);

  json status;
  REQUIRE(bus::test::eventually(
    [&] {
      status = f.get("/api/status");
      return status["breakers"].size() == 1 && status["breakers"][0]["state"] == "open";
    },
    10s));
  CHECK(status["writable"] == false);
  CHECK(status["health"]["ready"] == true);
  CHECK(status["transport"]["name"] == "in_memory");
  auto breaker = status["breakers"][0];
  CHECK(breaker["name"] == "payments");
  REQUIRE(breaker["changes"].size() == 1);
  CHECK(breaker["changes"][0]["to"] == "open");
  CHECK(breaker.contains("open_until"));
  REQUIRE(status["endpoints"].size() == 2);
  auto billing = status["endpoints"][0];
  CHECK(billing["name"] == "billing");
  CHECK(billing["error_queue"] == "billing_error");
  CHECK(billing["stats"]["dead_lettered"] == 3);
  CHECK(billing["stats"]["received"] == f.bus->stats("billing")->received);
  CHECK(status["endpoints"][1]["stats"]["dependency_paused"] == true);

  CHECK(bus::test::http_get(f.address, "/nowhere").status == 404);
  CHECK(bus::test::http_send("POST", f.address, "/api/status", "{}").status == 405);
}

TEST_CASE("the page shows where a stream endpoint stands in its stream", "[dashboard][http]") {
  bus::test::scratch_directory offsets;
  bus::test::real_threads_bus rig;
  auto b = rig.builder();
  b.metrics("127.0.0.1:0").stream_offset_directory(offsets.file("offsets"));
  b.stream_endpoint("projection", "audit", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<bus::test::order_placed>([](const bus::test::order_placed&) {});
  });
  auto bus = rig.build(b);
  REQUIRE(bus->start());
  auto status = [&] {
    auto a = bus::test::http_get(bus->metrics_address(), "/api/status");
    REQUIRE(a.status == 200);
    return json::parse(a.body);
  };
  // The endpoints come in name order.
  auto before = status();
  REQUIRE(before["endpoints"].size() == 2);
  REQUIRE(before["endpoints"][1]["name"] == "projection");
  CHECK(before["endpoints"][1]["stream"] == json({{"offset", -1}, {"lag", 0}}));
  CHECK_FALSE(before["endpoints"][0].contains("stream")); // billing reads a queue

  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->send("audit", bus::test::order_placed{"o-" + std::to_string(i), 1.0}));
  REQUIRE(bus::test::eventually([&] { return bus->stats("projection")->stream_offset == 2; }, 10s));
  CHECK(status()["endpoints"][1]["stream"] == json({{"offset", 2}, {"lag", 0}}));
}

TEST_CASE("the page groups the error queue's messages by endpoint and exception, with each "
          "message's fault headers",
          "[dashboard][http]") {
  failing_bus f("");
  f.fail_orders(4);
  auto failed = f.get("/api/failed");
  CHECK(failed["available"] == true);
  CHECK(failed["total"] == 4);
  REQUIRE(failed["groups"].size() == 1);
  auto group = failed["groups"][0];
  CHECK(group["endpoint"] == "billing");
  CHECK(group["exception_type"] == "std::runtime_error");
  CHECK(group["count"] == 4);
  CHECK(group["example"] == "card declined");
  CHECK(group["first_seen"] <= group["last_seen"]);

  auto listed = f.get("/api/failed/messages?queue=billing_error&endpoint=billing"
                      "&exception_type=std%3A%3Aruntime_error&limit=3");
  REQUIRE(listed["messages"].size() == 3);
  auto first = listed["messages"][0];
  CHECK(first["message_type"] == "order_placed");
  CHECK(first["exception_message"] == "card declined");
  bool has_endpoint_header = false;
  for (const auto& h : first["headers"])
    has_endpoint_header =
      has_endpoint_header || (h[0] == "bus-fault-endpoint" && h[1] == "billing");
  CHECK(has_endpoint_header);
  CHECK(bus::test::http_get(f.address, "/api/failed/messages?queue=billing_error&limit=x").status
        == 400);
}

TEST_CASE(
    "a write without the bus's token is refused with 403 and changes nothing, and a GET never "
    "writes",
    "[dashboard][http]") {
  SECTION("a bus without a token is read-only") {
    failing_bus f("");
    f.fail_orders(2);
    auto refused = bus::test::http_send("POST", f.address, "/api/failed/replay", group_body,
                                        "Bearer anything");
    CHECK(refused.status == 403);
    CHECK(refused.body.find("read-only") != std::string::npos);
    CHECK(f.rig.transport->depth("billing_error") == 2);
  }
  SECTION("a bus with a token refuses a missing or wrong one") {
    failing_bus f("s3cret");
    f.fail_orders(2);
    CHECK(bus::test::http_send("POST", f.address, "/api/failed/replay", group_body).status == 403);
    CHECK(bus::test::http_send("POST", f.address, "/api/failed/purge", group_body,
                               "Bearer s3cre")
            .status
          == 403);
    CHECK(bus::test::http_send("POST", f.address, "/api/failed/purge", group_body, "s3cret").status
          == 403);
    CHECK(bus::test::http_get(f.address, "/api/failed/purge?queue=billing_error").status == 405);
    CHECK(f.rig.transport->depth("billing_error") == 2);
    CHECK(f.get("/api/status")["writable"] == true);
  }
}

TEST_CASE("the token's scheme is case-insensitive (RFC 7235): 'bearer' and 'BEARER' with the "
          "token write, and the token itself stays exact",
          "[dashboard][http]") {
  failing_bus f("s3cret");
  f.fail_orders(2);
  CHECK(bus::test::http_send("POST", f.address, "/api/failed/purge", group_body, "bearer S3CRET")
          .status
        == 403);
  CHECK(f.rig.transport->depth("billing_error") == 2);
  auto lower =
    bus::test::http_send("POST", f.address, "/api/failed/purge", group_body, "bearer s3cret");
  REQUIRE(lower.status == 200);
  CHECK(json::parse(lower.body)["done"] == 2);
  CHECK(bus::test::http_send("POST", f.address, "/api/failed/purge", group_body, "BEARER  s3cret")
          .status
        == 200);
  CHECK(f.rig.transport->depth("billing_error") == 0);
}

TEST_CASE("with the token, replaying a group sends its messages back to be handled, and purging "
          "deletes them",
          "[dashboard][http]") {
  failing_bus f("s3cret");
  f.fail_orders(5);
  f.declining = false; // the cause is fixed

  auto bad = bus::test::http_send("POST", f.address, "/api/failed/replay", R"({"queue":"billing"})",
                                  "Bearer s3cret");
  CHECK(bad.status == 400);
  auto elsewhere = bus::test::http_send("POST", f.address, "/api/failed/replay",
                                        R"({"queue":"billing","id":"x"})", "Bearer s3cret");
  CHECK(elsewhere.status == 400); // not an error queue of this bus
  CHECK(f.rig.transport->depth("billing") == 0);

  // One message alone, by id, then the rest of the group.
  auto one = f.get("/api/failed/messages?queue=billing_error&endpoint=billing"
                   "&exception_type=std%3A%3Aruntime_error&limit=1")["messages"][0]["id"]
               .get<std::string>();
  auto single = bus::test::http_send("POST", f.address, "/api/failed/replay",
                                     R"({"queue":"billing_error","id":")" + one + "\"}",
                                     "Bearer s3cret");
  REQUIRE(single.status == 200);
  CHECK(json::parse(single.body)["done"] == 1);
  auto rest = bus::test::http_send("POST", f.address, "/api/failed/replay", group_body,
                                   "Bearer s3cret");
  REQUIRE(rest.status == 200);
  CHECK(json::parse(rest.body)["done"] == 4);
  REQUIRE(bus::test::eventually([&] { return f.billed == 5; }, 10s));
  CHECK(f.rig.transport->depth("billing_error") == 0);
  CHECK(f.get("/api/failed")["total"] == 0);

  f.declining = true;
  f.fail_orders(5);
  REQUIRE(f.rig.transport->depth("billing_error") == 5);
  auto purged = bus::test::http_send("POST", f.address, "/api/failed/purge", group_body,
                                     "Bearer s3cret");
  REQUIRE(purged.status == 200);
  CHECK(json::parse(purged.body)["done"] == 5);
  CHECK(f.rig.transport->depth("billing_error") == 0);
  CHECK(f.billed == 5);
}

TEST_CASE("the page explains an endpoint's policy for the exceptions its handlers threw lately, "
          "as JSON, SVG or text",
          "[dashboard][http]") {
  failing_bus f("");
  f.fail_orders(1);
  auto recent = f.get("/policy/billing");
  // Each handler's policy, described.
  REQUIRE(recent["handlers"].size() == 1);
  CHECK(recent["handlers"][0]["message_type"] == "order_placed");
  const auto& billing_rules = recent["handlers"][0]["policy"]["rules"];
  REQUIRE(billing_rules.size() == 1);
  CHECK(billing_rules[0]["exception"] == "*");
  CHECK(billing_rules[0]["terminal"] == "dead_letter"); // the error queue
  auto refunds = f.get("/policy/refunds")["handlers"][0]["policy"]["rules"];
  REQUIRE(refunds.size() == 1);
  CHECK_THAT(refunds[0]["exception"].get<std::string>(), Catch::Contains("payments_down"));
  CHECK(refunds[0]["trips"] == nlohmann::json::array({"payments"}));

  REQUIRE(recent["recent_exceptions"].size() == 1);
  CHECK(recent["recent_exceptions"][0]["exception_type"] == "std::runtime_error");
  CHECK(recent["recent_exceptions"][0]["message_type"] == "order_placed");

  auto plan = f.get("/policy/billing?exception_type=std%3A%3Aruntime_error");
  CHECK(plan["exception_type"] == "std::runtime_error");
  CHECK(plan["message_type"] == "order_placed");
  REQUIRE(plan["plan"].size() == 1); // dead_letter(): the first failure ends it
  auto svg = bus::test::http_get(f.address, "/policy/billing?exception_type=std::runtime_error"
                                            "&format=svg");
  CHECK(svg.status == 200);
  CHECK(svg.body.rfind("<svg", 0) == 0);
  auto text = bus::test::http_get(f.address, "/policy/billing?exception_type=std::runtime_error"
                                             "&format=text");
  CHECK(text.status == 200);
  CHECK(text.body.find("error queue") != std::string::npos);

  CHECK(bus::test::http_get(f.address, "/policy/billing?exception_type=std::logic_error").status
        == 404);
  CHECK(bus::test::http_get(f.address, "/policy/nowhere").status == 404);
  CHECK(bus::test::http_get(f.address, "/policy/billing?exception_type=std::runtime_error"
                                       "&format=pdf")
          .status
        == 400);
}

TEST_CASE("the page reads error queues only: another queue's messages are not shown",
          "[dashboard][http]") {
  failing_bus f("");
  REQUIRE(f.bus->send("refunds", bus::test::invoice_requested{"r-1", {}})); // waits on refunds
  auto other = bus::test::http_get(f.address, "/api/failed/messages?queue=refunds");
  CHECK(other.status == 400);
  CHECK(other.body.find("not the error queue") != std::string::npos);
  CHECK(bus::test::http_get(f.address, "/api/failed/messages?queue=billing_error").status == 200);
}
