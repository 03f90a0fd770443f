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

TEST_CASE("a message the broker dead-lettered shows the broker's reason when the bus wrote none") {
  // As RabbitMQ 3.10 writes it when a quorum queue's x-delivery-limit is
  // reached: the newest death first.
  queued_message m;
  m.headers = {{"x-death", json::array({json{{"count", 1}, {"reason", "delivery_limit"},
                                              {"queue", "billing"}},
                                         json{{"count", 1}, {"reason", "expired"},
                                              {"queue", "bus.delay.lvl0"}}})},
               {"x-first-death-reason", "expired"},
               {"x-last-death-reason", "delivery_limit"}};
  CHECK(fault_of(m).reason == "delivery_limit");

  // Without x-death (a client that copied only some headers), the last death's reason.
  m.headers.erase(m.headers.begin());
  CHECK(fault_of(m).reason == "delivery_limit");
  m.headers.pop_back();
  CHECK(fault_of(m).reason == "expired");

  // The bus's own reason, when it wrote one, comes first.
  m.headers.push_back({"bus-fault-reason", "retries exhausted"});
  CHECK(fault_of(m).reason == "retries exhausted");
}
