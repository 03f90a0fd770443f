#include <catch2/catch.hpp>

#include "messages.hpp"
#include "selection.hpp"

using namespace bus::ctl;
using bus::ctl::test::failed_message;
using bus::ctl::test::make_message;

namespace {

// a, b, c: out_of_range on order_placed; d: out_of_range on invoice; e: a
// database error on order_placed; a second copy of b at the end.
std::vector<queued_message> sample_queue() {
  std::vector<failed_message> specs{
    {"a", "order_placed", "std::out_of_range", "2026-11-22T18:00:03.000Z"},
    {"b", "order_placed", "std::out_of_range", "2026-11-22T18:00:01.000Z"},
    {"c", "order_placed", "std::out_of_range", "2026-11-22T18:00:05.000Z"},
    {"d", "invoice_requested", "std::out_of_range", "2026-11-22T18:00:02.000Z"},
    {"e", "order_placed", "db_error", "2026-11-22T18:00:04.000Z"},
    {"b", "order_placed", "std::out_of_range", "2026-11-22T18:00:06.000Z"},
  };
  std::vector<queued_message> out;
  for (std::size_t i = 0; i < specs.size(); ++i)
    out.push_back(make_message(specs[i], i + 1));
  return out;
}

} // namespace

TEST_CASE("selecting ids takes every copy of each, in queue order, and names the unknown ones") {
  auto q = sample_queue();
  auto s = select(q, by_ids{{"e", "b", "nope", "nope", "zzz"}});
  CHECK(s.chosen == std::vector<std::size_t>{1, 4, 5});
  CHECK(s.unknown_ids == std::vector<std::string>{"nope", "zzz"});
}

TEST_CASE("selecting a group matches the exception type, and the message type when given") {
  auto q = sample_queue();
  CHECK(select(q, by_group{std::string("std::out_of_range"), std::nullopt}).chosen
        == std::vector<std::size_t>{0, 1, 2, 3, 5});
  CHECK(select(q, by_group{std::string("std::out_of_range"), std::string("invoice_requested")}).chosen
        == std::vector<std::size_t>{3});
  CHECK(select(q, by_group{std::nullopt, std::string("order_placed")}).chosen
        == std::vector<std::size_t>{0, 1, 2, 4, 5});
  CHECK(select(q, by_group{std::string("std::out_of"), std::nullopt}).chosen.empty());
  CHECK(select(q, by_group{std::string("std::out_of_range"), std::nullopt}).unknown_ids.empty());
}

TEST_CASE("selecting every message takes all of them, and none of an empty queue") {
  auto q = sample_queue();
  CHECK(select(q, every_message{}).chosen.size() == q.size());
  CHECK(select({}, every_message{}).chosen.empty());
}

TEST_CASE("a message without a message id is never selected by id, even by an empty one") {
  auto q = sample_queue();
  q[0].id.clear();
  auto s = select(q, by_ids{{""}});
  CHECK(s.chosen.empty());
  CHECK(find_by_id(q, "") == nullptr);
  CHECK(find_by_id(q, "c") == &q[2]);
}

TEST_CASE("groups count by exception type and message type, largest first, with their time span") {
  auto groups = group_messages(sample_queue());
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].exception_type == "std::out_of_range");
  CHECK(groups[0].message_type == "order_placed");
  CHECK(groups[0].count == 4);
  CHECK(groups[0].ids == std::vector<std::string>{"a", "b", "c", "b"});
  CHECK(groups[0].first_failure_at == "2026-11-22T18:00:01.000Z");
  CHECK(groups[0].last_failure_at == "2026-11-22T18:00:06.000Z");
  // Equal counts keep the order of their names.
  CHECK(groups[1].exception_type == "db_error");
  CHECK(groups[1].count == 1);
  CHECK(groups[2].exception_type == "std::out_of_range");
  CHECK(groups[2].message_type == "invoice_requested");
  CHECK(groups[2].first_failure_at == groups[2].last_failure_at);
}

TEST_CASE("messages without fault headers form a group of their own") {
  queued_message skipped;
  skipped.id = "s-1";
  skipped.headers = {{"bus-message-id", "s-1"}};
  skipped.properties = {{"type", "legacy_type"}};
  auto groups = group_messages({skipped});
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].exception_type.empty());
  CHECK(groups[0].message_type == "legacy_type"); // from the AMQP property
  CHECK(groups[0].first_failure_at.empty());
  CHECK(select({skipped}, by_group{std::string(), std::nullopt}).chosen.size() == 1);
}
