// busctl's view of a message read through the admin seam: its id, and the
// fault facts it shows.
#include <catch2/catch.hpp>

#include "queued_message.hpp"

using namespace bus::ctl;
using json = nlohmann::json;

TEST_CASE("a message is known by its bus-message-id, else by its AMQP message id, else by none") {
  bus::rabbitmq_queued_message m;
  m.headers = {{"bus-message-id", "id-7"}, {"bus-fault-exception-type", "db_error"}};
  m.properties = json{{"message_id", "amqp-id"}};
  m.body = "{}";
  m.redelivered = true;
  auto q = to_queued_message(m, 4);
  CHECK(q.position == 4);
  CHECK(q.redelivered);
  CHECK(q.id == "id-7");
  CHECK(q.body == "{}");
  CHECK(fault_of(q).exception_type == "db_error");

  m.headers.clear();
  CHECK(to_queued_message(m, 1).id == "amqp-id");
  m.properties = json::object();
  CHECK(to_queued_message(m, 1).id.empty());
}
