#include <catch2/catch.hpp>

#include <map>

#include "bus/header_names.hpp"
#include "messages.hpp"
#include "replay_headers.hpp"

using namespace bus::ctl;
namespace h = bus::header;

TEST_CASE("a replay drops every fault fact but keeps the message's own fault address") {
  for (auto name : {h::fault_exception_type, h::fault_message, h::fault_at, h::fault_host,
                    h::fault_process, h::fault_endpoint, h::fault_original_address,
                    h::fault_immediate_retries, h::fault_delivery_count, h::fault_reason,
                    h::fault_pending})
    CHECK_FALSE(kept_on_replay(name));
  CHECK_FALSE(kept_on_replay("bus-fault-something-new"));
  CHECK(kept_on_replay(h::fault_address));
}

TEST_CASE("a replay resets what would send the message straight back to the error queue") {
  CHECK_FALSE(kept_on_replay(h::delivery_count));
  CHECK_FALSE(kept_on_replay(h::failed_attempts));
  CHECK_FALSE(kept_on_replay(h::first_failure_at));
}

TEST_CASE("a replay drops the broker's headers and notes of an earlier receipt") {
  for (auto name : {"x-death", "x-delivery-count", "x-first-death-queue", "bus-wire-error",
                    "bus-skipped-reason"})
    CHECK_FALSE(kept_on_replay(name));
}

TEST_CASE("a replay keeps the message's identity and the user's headers") {
  for (auto name : {h::message_id, h::message_type, h::correlation_id, h::sent_at,
                    h::source_address, h::response_address, h::destination_address})
    CHECK(kept_on_replay(name));
  CHECK(kept_on_replay("tenant"));
  CHECK(kept_on_replay("X-Custom")); // only the broker's lower-case x- prefix is reserved
}

TEST_CASE("a replay adds a fresh delivery count, its time, its number and its source") {
  auto m = bus::ctl::test::make_message({"id-1"});
  auto now = bus::from_unix_ms(1'795'000'000'123);
  auto added = replay_additions(m, now, "billing_error");
  std::map<std::string, std::string> by_name(added.begin(), added.end());
  CHECK(by_name.at("bus-delivery-count") == "0");
  CHECK(by_name.at("bus-replayed-at") == bus::to_iso8601(now));
  CHECK(by_name.at("bus-replay-count") == "1");
  CHECK(by_name.at("bus-replayed-from") == "billing_error");
  for (const auto& [name, value] : added)
    CHECK_FALSE(kept_on_replay(name)); // never written twice

  m.headers.push_back({"bus-replay-count", "2"});
  std::map<std::string, std::string> again;
  for (auto& [name, value] : replay_additions(m, now, "billing_error"))
    again[name] = value;
  CHECK(again.at("bus-replay-count") == "3");
}

TEST_CASE("a replay goes to the original address, else to the endpoint's queue") {
  auto m = bus::ctl::test::make_message({"id-1", "t", "e", "2026-11-22T18:00:00.000Z", "billing.v2"});
  CHECK(replay_destination(m, "billing") == "billing.v2");
  auto without = bus::ctl::test::make_message({"id-2", "t", "e", "2026-11-22T18:00:00.000Z", ""});
  CHECK(replay_destination(without, "billing") == "billing");
}

TEST_CASE("replay --to sends every message to the queue it names") {
  auto m = bus::ctl::test::make_message({"id-1", "t", "e", "2026-11-22T18:00:00.000Z", "billing.v2"});
  CHECK(replay_destination(m, "billing", std::string("billing.fixes")) == "billing.fixes");
}

TEST_CASE("a message read from a stream is refused a replay into the stream, not to a queue") {
  auto m = bus::ctl::test::make_message({"id-1", "t", "e", "2026-11-22T18:00:00.000Z", "audit"});
  CHECK(replay_refusal(m, "audit").empty()); // a queue's message: no stream offset
  m.headers.push_back({std::string(h::fault_stream_offset), "41"});
  CHECK_THAT(replay_refusal(m, replay_destination(m, "audit-reader")),
             Catch::Contains("read from stream 'audit' at offset 41"));
  CHECK(replay_refusal(m, replay_destination(m, "audit-reader", std::string("audit.fixes"))).empty());
}
