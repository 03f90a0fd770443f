// Failed messages as the bus's page shows them: the fault facts read back
// from an error-queue copy, the groups they form, and the copy a replay
// sends (the rules busctl's replay shares).
#include <catch2/catch.hpp>

#include "bus/failed_messages.hpp"
#include "bus/header_names.hpp"
#include "bus/replay_headers.hpp"

namespace h = bus::header;

namespace {

bus::failed_message failed(std::string endpoint, std::string type, std::string at,
                           std::string text = "boom") {
  bus::failed_message m;
  m.queue = "orders_error";
  m.endpoint = std::move(endpoint);
  m.exception_type = std::move(type);
  m.failed_at = std::move(at);
  m.exception_message = std::move(text);
  return m;
}

} // namespace

TEST_CASE("a failed message's fault facts are read from the headers the bus wrote") {
  bus::envelope e;
  e.message_id = "m-1";
  e.message_type = "order_placed";
  e.headers.set(h::fault_endpoint, "orders");
  e.headers.set(h::fault_exception_type, "db_timeout");
  e.headers.set(h::fault_message, "no answer in 5 s");
  e.headers.set(h::fault_at, "2026-11-26T10:00:00.000Z");
  e.headers.set(h::fault_original_address, "orders");
  e.headers.set("tenant", "acme");
  auto m = bus::failed_message_of(e, "orders_error");
  CHECK(m.queue == "orders_error");
  CHECK(m.id == "m-1");
  CHECK(m.message_type == "order_placed");
  CHECK(m.endpoint == "orders");
  CHECK(m.exception_type == "db_timeout");
  CHECK(m.exception_message == "no answer in 5 s");
  CHECK(m.original_address == "orders");
  CHECK(m.reason.empty()); // not written: empty, not invented
  REQUIRE(m.headers.size() == 6);
  CHECK(m.headers.back() == std::pair<std::string, std::string>{"tenant", "acme"});
}

TEST_CASE("failed messages group by endpoint and exception type, most numerous first, with the "
          "first and last failure and the latest text") {
  auto groups = bus::group_failed({
    failed("orders", "db_timeout", "2026-11-26T10:00:02.000Z", "second"),
    failed("billing", "card_declined", "2026-11-26T09:00:00.000Z"),
    failed("orders", "db_timeout", "2026-11-26T10:00:01.000Z", "first"),
    failed("orders", "db_timeout", "2026-11-26T10:00:03.000Z", "third"),
    failed("orders", "card_declined", "2026-11-26T08:00:00.000Z"),
  });
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].endpoint == "orders");
  CHECK(groups[0].exception_type == "db_timeout");
  CHECK(groups[0].count == 3);
  CHECK(groups[0].first_seen == "2026-11-26T10:00:01.000Z");
  CHECK(groups[0].last_seen == "2026-11-26T10:00:03.000Z");
  CHECK(groups[0].example == "third");
  // Ties keep the order of (queue, endpoint, type).
  CHECK(groups[1].endpoint == "billing");
  CHECK(groups[2].endpoint == "orders");
  CHECK(groups[2].exception_type == "card_declined");
  CHECK(bus::group_failed({}).empty());
}

TEST_CASE("a replayed copy drops the fault facts and the retry counts, keeps the rest, and counts "
          "its replays") {
  bus::envelope e;
  e.message_id = "m-1";
  e.delivery_count = 3;
  e.headers.set("tenant", "acme");
  e.headers.set(h::fault_address, "faults");
  e.headers.set(h::fault_exception_type, "db_timeout");
  e.headers.set(h::failed_attempts, "4");
  e.headers.set("x-death", "[...]");
  e.headers.set(h::replay_count, "2");
  auto at = bus::from_iso8601("2026-11-26T10:00:00.000Z");
  REQUIRE(at);
  auto copy = bus::replayed_copy(e, *at, "orders_error");
  CHECK(copy.message_id == "m-1");
  CHECK(copy.delivery_count == 0);
  CHECK(copy.headers.find("tenant") == std::optional<std::string_view>("acme"));
  CHECK(copy.headers.contains(h::fault_address));
  CHECK_FALSE(copy.headers.contains(h::fault_exception_type));
  CHECK_FALSE(copy.headers.contains(h::failed_attempts));
  CHECK_FALSE(copy.headers.contains("x-death"));
  CHECK(copy.headers.find(h::replay_count) == std::optional<std::string_view>("3"));
  CHECK(copy.headers.find(h::replayed_from) == std::optional<std::string_view>("orders_error"));
  CHECK(copy.headers.find(h::replayed_at) == std::optional<std::string_view>("2026-11-26T10:00:00.000Z"));
  CHECK(copy.headers.find(h::delivery_count) == std::optional<std::string_view>("0"));
}

TEST_CASE("a message read from a stream is not replayed into the stream, only to another queue") {
  bus::envelope e;
  e.message_id = "m-7";
  e.headers.set(h::fault_original_address, "audit");
  e.headers.set(h::fault_stream_offset, "41");
  auto m = bus::failed_message_of(e, "audit-reader_error");
  CHECK(m.stream_offset == "41");

  auto refusal = bus::stream_replay_refusal(m.stream_offset, m.original_address, "audit");
  CHECK_THAT(refusal, Catch::Contains("read from stream 'audit' at offset 41")
                        && Catch::Contains("every reader would handle it again")
                        && Catch::Contains("--to QUEUE"));
  CHECK(bus::stream_replay_refusal(m.stream_offset, m.original_address, "audit-fixes").empty());
  // A queue's message goes back to its queue as always.
  CHECK(bus::stream_replay_refusal("", "orders", "orders").empty());
}
