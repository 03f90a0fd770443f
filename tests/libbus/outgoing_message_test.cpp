// The outbox's record of a sent message: what a store keeps, and what a
// sweeper or a returning delivery reads back (issue 21).
#include <catch2/catch.hpp>

#include "bus/message_registry.hpp"
#include "bus/outgoing_message.hpp"
#include "support/sample_messages.hpp"

using bus::errc;

namespace {

bus::outgoing_message sample(const bus::message_registry& r) {
  bus::outgoing_message out;
  out.queue = "billing";
  out.delay = std::chrono::milliseconds(1500);
  out.message.message_id = "m-1";
  out.message.message_type = "order_placed";
  out.message.correlation_id = "c-1";
  out.message.sent_at = bus::from_unix_ms(1'000);
  out.message.source_address = "orders";
  out.message.headers.set("tenant", "acme");
  out.message.headers.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  out.message.body = *r.make_body(bus::test::order_placed{"o-1", 5});
  return out;
}

} // namespace

TEST_CASE("a stored outgoing message reads back as it was sent") {
  bus::message_registry r;
  REQUIRE(r.add<bus::test::order_placed>("order_placed"));
  auto out = sample(r);

  auto record = bus::encode_outgoing(out);
  REQUIRE(record);
  auto back = bus::decode_outgoing(*record);
  REQUIRE(back);
  CHECK(back->queue == "billing");
  CHECK(back->delay == std::chrono::milliseconds(1500));
  CHECK(back->message.message_id == "m-1");
  CHECK(back->message.message_type == "order_placed");
  CHECK(back->message.correlation_id == "c-1");
  CHECK(back->message.sent_at == out.message.sent_at);
  CHECK(back->message.source_address == "orders");
  CHECK(back->message.headers == out.message.headers);
  auto body = r.ensure_typed(back->message.message_type, back->message.body);
  REQUIRE(body);
  CHECK(*body->get<bus::test::order_placed>() == bus::test::order_placed{"o-1", 5});
}

TEST_CASE("a publish is stored with an empty queue and stays a publish") {
  bus::message_registry r;
  REQUIRE(r.add<bus::test::order_placed>("order_placed"));
  auto out = sample(r);
  out.queue.clear();
  out.delay = {};
  auto back = bus::decode_outgoing(*bus::encode_outgoing(out));
  REQUIRE(back);
  CHECK(back->queue.empty());
  CHECK(back->delay == bus::duration::zero());
}

TEST_CASE("a corrupt outgoing record is refused with what is wrong, never thrown on") {
  bus::message_registry r;
  REQUIRE(r.add<bus::test::order_placed>("order_placed"));
  auto good = nlohmann::json::parse(*bus::encode_outgoing(sample(r)));
  auto with = [&](const char* field, nlohmann::json value) {
    auto j = good;
    if (value.is_null())
      j.erase(field);
    else
      j[field] = std::move(value);
    return j.dump();
  };
  struct row {
    std::string record;
    std::string says;
  };
  std::vector<row> rows{
    {"", "not a JSON object"},
    {"{\"v\":1,", "not a JSON object"},
    {"[1,2]", "not a JSON object"},
    {with("v", 2), "version is not 1"},
    {with("v", nullptr), "version is not 1"},
    {with("queue", 5), "'queue'"},
    {with("delay_ms", -1), "'delay_ms'"},
    {with("delay_ms", "soon"), "'delay_ms'"},
    {with("headers", nlohmann::json::object()), "'headers'"},
    {with("headers", nlohmann::json::array({nlohmann::json::array({"only-a-name"})})),
     "[name, value]"},
    {with("body", nlohmann::json::object()), "'body'"},
    {with("headers", nlohmann::json::array()), "bus-message-id"},
  };
  for (const auto& [record, says] : rows) {
    CAPTURE(record);
    auto back = bus::decode_outgoing(record);
    REQUIRE_FALSE(back);
    CHECK(back.error().code == errc::malformed_message);
    CHECK_THAT(back.error().message, Catch::Contains(says));
  }
}
