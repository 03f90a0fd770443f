// The admin seam's reading of a message (transports/rabbitmq/src/amqp_fields):
// every AMQP field kind and the properties that were set, as JSON.
#include <catch2/catch.hpp>

#include <array>

#include "amqp_fields.hpp"

using namespace bus;
using json = nlohmann::json;

namespace {

amqp_table_entry_t entry(const char* key, amqp_field_value_t value) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value = value;
  return e;
}

amqp_field_value_t text(const char* s) {
  amqp_field_value_t v{};
  v.kind = AMQP_FIELD_KIND_UTF8;
  v.value.bytes = amqp_cstring_bytes(s);
  return v;
}

amqp_field_value_t i64(std::int64_t n) {
  amqp_field_value_t v{};
  v.kind = AMQP_FIELD_KIND_I64;
  v.value.i64 = n;
  return v;
}

} // namespace

TEST_CASE("a message from the broker keeps its headers in order, of every kind, and its body") {
  std::array<amqp_table_entry_t, 2> death{entry("count", i64(3)), entry("queue", text("billing"))};
  amqp_field_value_t death_table{};
  death_table.kind = AMQP_FIELD_KIND_TABLE;
  death_table.value.table = amqp_table_t{2, death.data()};
  amqp_field_value_t deaths{};
  deaths.kind = AMQP_FIELD_KIND_ARRAY;
  deaths.value.array = amqp_array_t{1, &death_table};
  amqp_field_value_t flag{};
  flag.kind = AMQP_FIELD_KIND_BOOLEAN;
  flag.value.boolean = 1;
  amqp_field_value_t stamp{};
  stamp.kind = AMQP_FIELD_KIND_TIMESTAMP;
  stamp.value.u64 = 1'795'000'000;

  std::array<amqp_table_entry_t, 6> headers{
    entry("bus-message-id", text("id-7")), entry("bus-fault-exception-type", text("db_error")),
    entry("x-delivery-count", i64(2)),     entry("x-death", deaths),
    entry("flag", flag),                   entry("at", stamp)};
  std::string body = R"({"order_id":"o-7"})";
  amqp_message_t m{};
  m.properties._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG
                        | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  m.properties.headers = amqp_table_t{static_cast<int>(headers.size()), headers.data()};
  m.properties.content_type = amqp_cstring_bytes("application/json");
  m.properties.message_id = amqp_cstring_bytes("amqp-id");
  m.properties.delivery_mode = 2;
  m.body = amqp_bytes_t{body.size(), body.data()};

  auto q = detail::to_queued_message(m, true);
  CHECK(q.redelivered);
  REQUIRE(q.headers.size() == 6);
  CHECK(q.headers[0].name == "bus-message-id");
  CHECK(q.headers[2].value == 2);
  CHECK(q.headers[3].value == json::array({json{{"count", 3}, {"queue", "billing"}}}));
  CHECK(q.headers[4].value == true);
  CHECK(q.headers[5].value == 1'795'000'000);
  CHECK(q.properties == json{{"content_type", "application/json"},
                             {"message_id", "amqp-id"},
                             {"delivery_mode", 2}});
  CHECK(q.body == body);
}

TEST_CASE("a message without headers or body reads as empty ones") {
  amqp_message_t m{};
  m.properties._flags = AMQP_BASIC_MESSAGE_ID_FLAG;
  m.properties.message_id = amqp_cstring_bytes("legacy-1");
  auto q = detail::to_queued_message(m, false);
  CHECK_FALSE(q.redelivered);
  CHECK(q.headers.empty());
  CHECK(q.body.empty());
  CHECK(q.properties == json{{"message_id", "legacy-1"}});
}
