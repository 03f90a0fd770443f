#include <catch2/catch.hpp>

#include "messages.hpp"
#include "render.hpp"
#include "text_lines.hpp"
#include "text_table.hpp"

using namespace bus::ctl;
using bus::ctl::test::make_message;
using json = nlohmann::json;

namespace {

using bus::ctl::test::lines_of;

queue_listing sample_listing() {
  queue_listing l;
  l.queue = "billing_error";
  l.messages = {make_message({"id-1", "order_placed", "std::out_of_range"}, 1),
                make_message({"id-22", "invoice_requested", "bus::samples::validation_error"}, 2)};
  return l;
}

} // namespace

TEST_CASE("a table aligns every column on its widest cell, counting characters not bytes") {
  auto text = render_table({"ID", "TYPE"}, {{"a", "ünïcode"}, {"longer-id", "x"}});
  auto lines = lines_of(text);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "ID         TYPE");
  CHECK(lines[1] == "a          ünïcode");
  CHECK(lines[2] == "longer-id  x");
}

TEST_CASE("list prints one aligned row per message with its fault facts") {
  auto lines = lines_of(list_text(sample_listing()));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "queue 'billing_error': 2 messages");
  CHECK_THAT(lines[1], Catch::StartsWith("#  MESSAGE ID  MESSAGE TYPE       EXCEPTION"));
  CHECK_THAT(lines[2], Catch::StartsWith("1  id-1        order_placed       std::out_of_range"));
  CHECK_THAT(lines[3], Catch::StartsWith("2  id-22       invoice_requested  bus::samples::validation_error"));
  // The EXCEPTION column starts at the same place on every line.
  CHECK(lines[1].find("EXCEPTION") == lines[2].find("std::out_of_range"));
  CHECK_THAT(lines[2], Catch::EndsWith("2        1             -"));
}

TEST_CASE("an empty queue is listed as empty, without a table") {
  queue_listing l;
  l.queue = "billing_error";
  CHECK(list_text(l) == "queue 'billing_error': 0 messages\n");
  CHECK(groups_text(l) == "queue 'billing_error': 0 messages in 0 groups\n");
}

TEST_CASE("list --json is one document with every message's facts") {
  auto doc = json::parse(to_text(list_json(sample_listing())));
  CHECK(doc["queue"] == "billing_error");
  CHECK(doc["count"] == 2);
  CHECK(doc["truncated"] == false);
  REQUIRE(doc["messages"].size() == 2);
  const auto& first = doc["messages"][0];
  CHECK(first["id"] == "id-1");
  CHECK(first["message_type"] == "order_placed");
  CHECK(first["exception_type"] == "std::out_of_range");
  CHECK(first["immediate_retries"] == 2);
  CHECK(first["delivery_count"] == 1);
  CHECK(first["replay_count"].is_null());
  CHECK(first["original_address"] == "billing");
}

TEST_CASE("groups --json counts each group and lists its ids") {
  auto l = sample_listing();
  l.messages.push_back(make_message({"id-3", "order_placed", "std::out_of_range"}, 3));
  auto doc = json::parse(to_text(groups_json(l)));
  REQUIRE(doc["groups"].size() == 2);
  CHECK(doc["groups"][0]["count"] == 2);
  CHECK(doc["groups"][0]["ids"] == json({"id-1", "id-3"}));
  CHECK(doc["groups"][1]["exception_type"] == "bus::samples::validation_error");
  auto text = lines_of(groups_text(l));
  CHECK(text[0] == "queue 'billing_error': 3 messages in 2 groups");
  CHECK_THAT(text[2], Catch::StartsWith("2      std::out_of_range"));
}

TEST_CASE("show prints the fault, every header, the properties and the body as indented JSON") {
  auto m = make_message({"id-1"});
  m.headers.push_back({"x-death", json::array({json{{"count", 1}, {"reason", "rejected"}}})});
  m.properties = {{"content_type", "application/json"}, {"delivery_mode", 2}};
  auto text = show_text("billing_error", m);
  CHECK_THAT(text, Catch::StartsWith("message id-1 (position 1 on 'billing_error')\n"));
  CHECK_THAT(text, Catch::Contains("  exception     std::out_of_range"));
  CHECK_THAT(text, Catch::Contains("  bus-fault-message            it broke"));
  CHECK_THAT(text, Catch::Contains(R"(x-death                      [{"count":1,"reason":"rejected"}])"));
  CHECK_THAT(text, Catch::Contains("  content_type   application/json"));
  CHECK_THAT(text, Catch::EndsWith("body:\n{\n  \"order_id\": \"id-1\"\n}\n"));

  auto doc = json::parse(to_text(show_json("billing_error", m)));
  CHECK(doc["id"] == "id-1");
  CHECK(doc["fault"]["exception_message"] == "it broke");
  CHECK(doc["headers"][0] == json({{"name", "bus-message-id"}, {"value", "id-1"}}));
  CHECK(doc["body"] == R"({"order_id":"id-1"})");
}

TEST_CASE("a body that is not JSON or not UTF-8 is still printed, and the JSON stays valid") {
  auto m = make_message({"id-1"});
  m.body = std::string("\xff\xfe raw", 6);
  CHECK_THAT(show_text("q", m), Catch::EndsWith(m.body + "\n"));
  auto doc = json::parse(to_text(show_json("q", m)));
  CHECK(doc["body"].get<std::string>().find("raw") != std::string::npos);
}

TEST_CASE("replay and purge reports print what was done and, apart, what was not") {
  replay_report r;
  r.queue = "billing_error";
  r.replayed = {{"id-1", "billing", ""}};
  r.failed = {{"id-2", "gone", "the broker returned it (312 NO_ROUTE): is there a queue 'gone'?"}};
  r.unknown_ids = {"id-9"};
  CHECK(replay_text(r) == "replayed id-1 to 'billing'\nreplayed 1 of 2 selected messages from 'billing_error'\n");
  auto problems = problem_lines(r);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "no message 'id-9' on 'billing_error'");
  CHECK_THAT(problems[1], Catch::StartsWith("not replayed: id-2 to 'gone': the broker returned it"));
  auto doc = json::parse(to_text(replay_json(r)));
  CHECK(doc["replayed"][0]["id"] == "id-1");
  CHECK(doc["failed"][0]["problem"].get<std::string>().find("NO_ROUTE") != std::string::npos);
  CHECK(doc["unknown_ids"] == json({"id-9"}));

  purge_report p;
  p.queue = "billing_error";
  p.purged = 2;
  p.ids = {"a", "b"};
  CHECK(purge_text(p) == "purged a\npurged b\npurged 2 messages from 'billing_error'\n");
  CHECK(json::parse(to_text(purge_json(p)))["purged"] == 2);
}

TEST_CASE("consumers on the queue and a --limit are pointed out") {
  auto n = notes("billing_error", 2, true);
  REQUIRE(n.size() == 2);
  CHECK_THAT(n[0], Catch::Contains("2 consumers are attached to 'billing_error'"));
  CHECK_THAT(n[1], Catch::Contains("--limit"));
  CHECK(notes("q", 0, false).empty());
}

TEST_CASE("exit codes: done, nothing matched, or refused in part") {
  replay_report r;
  CHECK(exit_code_of(r) == exit_code::nothing_matched); // an empty selection
  r.replayed = {{"a", "billing", ""}};
  CHECK(exit_code_of(r) == exit_code::ok);
  r.unknown_ids = {"b"};
  CHECK(exit_code_of(r) == exit_code::nothing_matched);
  r.failed = {{"c", "billing", "refused"}};
  CHECK(exit_code_of(r) == exit_code::failed);

  purge_report p;
  CHECK(exit_code_of(p) == exit_code::nothing_matched);
  p.purged = 3;
  CHECK(exit_code_of(p) == exit_code::ok);
  p.warning = "lost the connection";
  CHECK(exit_code_of(p) == exit_code::failed);

  CHECK(json::parse(to_text(error_json(exit_code::unreachable, "no broker")))["error"]["exit_code"] == 3);
}
