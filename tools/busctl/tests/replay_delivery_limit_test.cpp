// A message that reached a quorum queue's x-delivery-limit, dead-lettered by
// the broker itself: busctl shows the broker's reason, and its replay
// carries none of the broker's delivery bookkeeping, so that the queue
// counts its deliveries afresh (Rebus's RabbitMQ transport once carried
// x-delivery-count over, and a replay came back already at the limit).
#include <catch2/catch.hpp>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <optional>
#include <string>

#include "bus/rabbitmq_admin.hpp"
#include "busctl_runner.hpp"

using namespace bus::ctl::test;
using bus::test::unique_name;
using nlohmann::json;

namespace {

// A client that knows nothing of the bus: declares queues with arguments,
// takes messages with basic.get and settles them one by one.
class raw_consumer {
public:
  explicit raw_consumer(const bus::rabbitmq_settings& s) {
    conn_ = amqp_new_connection();
    auto* socket = amqp_tcp_socket_new(conn_);
    REQUIRE(amqp_socket_open(socket, s.host.c_str(), s.port) == AMQP_STATUS_OK);
    check(amqp_login(conn_, s.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                     s.user.c_str(), s.password.c_str()),
          "login");
    amqp_channel_open(conn_, 1);
    check(amqp_get_rpc_reply(conn_), "channel.open");
  }
  ~raw_consumer() {
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn_);
  }
  raw_consumer(const raw_consumer&) = delete;
  raw_consumer& operator=(const raw_consumer&) = delete;

  void declare_classic(const std::string& queue) {
    amqp_queue_declare(conn_, 1, amqp_cstring_bytes(queue.c_str()), 0, 1, 0, 0, amqp_empty_table);
    check(amqp_get_rpc_reply(conn_), "queue.declare (classic)");
  }

  // A quorum queue that dead-letters to `error_queue` once a message was
  // delivered `limit` times more than once.
  void declare_quorum(const std::string& queue, int limit, const std::string& error_queue) {
    amqp_table_entry_t args[4]{};
    args[0].key = amqp_cstring_bytes("x-queue-type");
    args[0].value.kind = AMQP_FIELD_KIND_UTF8;
    args[0].value.value.bytes = amqp_cstring_bytes("quorum");
    args[1].key = amqp_cstring_bytes("x-delivery-limit");
    args[1].value.kind = AMQP_FIELD_KIND_I32;
    args[1].value.value.i32 = limit;
    args[2].key = amqp_cstring_bytes("x-dead-letter-exchange");
    args[2].value.kind = AMQP_FIELD_KIND_UTF8;
    args[2].value.value.bytes = amqp_cstring_bytes("");
    args[3].key = amqp_cstring_bytes("x-dead-letter-routing-key");
    args[3].value.kind = AMQP_FIELD_KIND_UTF8;
    args[3].value.value.bytes = amqp_cstring_bytes(error_queue.c_str());
    amqp_queue_declare(conn_, 1, amqp_cstring_bytes(queue.c_str()), 0, 1, 0, 0,
                       amqp_table_t{4, args});
    check(amqp_get_rpc_reply(conn_), "queue.declare (quorum)");
  }

  struct taken {
    std::uint64_t tag = 0;
    bool redelivered = false;
    json headers = json::object();
  };

  // The head of `queue`, held until settled; nothing if it is empty.
  std::optional<taken> get(const std::string& queue) {
    amqp_maybe_release_buffers(conn_);
    auto reply = amqp_basic_get(conn_, 1, amqp_cstring_bytes(queue.c_str()), /*no_ack=*/0);
    check(reply, "basic.get");
    if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
      return std::nullopt;
    auto* ok = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded);
    taken t;
    t.tag = ok->delivery_tag;
    t.redelivered = ok->redelivered != 0;
    amqp_message_t m{};
    check(amqp_read_message(conn_, 1, &m, 0), "reading the message");
    const auto& p = m.properties;
    if (p._flags & AMQP_BASIC_HEADERS_FLAG)
      for (int i = 0; i < p.headers.num_entries; ++i) {
        const auto& e = p.headers.entries[i];
        std::string name(static_cast<const char*>(e.key.bytes), e.key.len);
        if (e.value.kind == AMQP_FIELD_KIND_UTF8)
          t.headers[name] = std::string(static_cast<const char*>(e.value.value.bytes.bytes),
                                        e.value.value.bytes.len);
        else if (e.value.kind == AMQP_FIELD_KIND_I64)
          t.headers[name] = e.value.value.i64;
        else
          t.headers[name] = "<kind " + std::to_string(e.value.kind) + ">";
      }
    amqp_destroy_message(&m);
    return t;
  }

  void requeue(const taken& t) {
    REQUIRE(amqp_basic_reject(conn_, 1, t.tag, /*requeue=*/1) == AMQP_STATUS_OK);
  }
  void ack(const taken& t) { REQUIRE(amqp_basic_ack(conn_, 1, t.tag, 0) == AMQP_STATUS_OK); }

private:
  static void check(amqp_rpc_reply_t r, const char* what) {
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
      FAIL("raw consumer: " << what << " failed (reply type " << r.reply_type << ")");
  }
  amqp_connection_state_t conn_ = nullptr;
};

std::uint32_t depth(bus::rabbitmq_admin& admin, const std::string& queue) {
  auto d = admin.depth(queue);
  REQUIRE(d);
  return d->messages;
}

} // namespace

TEST_CASE("a message dead-lettered at a quorum queue's delivery limit shows the broker's reason, and its replay is delivered afresh and handled once") {
  auto settings = bus::test::test_settings();
  auto queue = unique_name("quorum.billing");
  auto error_queue = queue + "_error";
  auto id = unique_name("poison");
  raw_consumer consumer(settings);
  consumer.declare_classic(error_queue);
  consumer.declare_quorum(queue, /*limit=*/2, error_queue);
  auto admin = bus::rabbitmq_admin::connect(settings);
  REQUIRE(admin);
  REQUIRE((*admin)->publish(queue, {{{"bus-message-id", id}, {"tenant", "acme"}}, id,
                                    R"({"order_id":"o-1"})"}));

  // A consumer that crashes on it, again and again: the broker counts each
  // requeue, and past the limit moves it to the error queue by itself.
  int deliveries = 0;
  // x-delivery-count of each delivery, null where absent. RabbitMQ 3.10.8
  // writes 0 on the first basic.get already: [0, 1, 2].
  json counts = json::array();
  REQUIRE(bus::test::eventually(
    [&] {
      if (auto t = consumer.get(queue)) {
        ++deliveries;
        counts.push_back(t->headers.contains("x-delivery-count") ? t->headers["x-delivery-count"]
                                                                 : json());
        consumer.requeue(*t);
      }
      return depth(**admin, error_queue) == 1;
    },
    std::chrono::seconds(20)));
  CHECK(deliveries == 3); // the first delivery and 2 redeliveries
  REQUIRE(counts.size() == 3);
  CHECK(counts[2] == 2);
  CHECK_FALSE(consumer.get(queue));

  // busctl shows why: the broker's reason, the bus having written none.
  auto shown = busctl_json({"show", queue, id, "--queue", error_queue});
  CHECK(shown["fault"]["reason"] == "delivery_limit");
  auto listed = busctl_json({"list", queue, "--queue", error_queue});
  REQUIRE(listed["count"] == 1);
  CHECK(listed["messages"][0]["reason"] == "delivery_limit");

  // Replayed to the queue it died on (no bus-fault-original-address: the
  // endpoint named on the command line).
  auto replay = busctl_json({"replay", queue, id, "--queue", error_queue});
  REQUIRE(replay["replayed"].size() == 1);
  CHECK(replay["replayed"][0]["destination"] == queue);
  CHECK(depth(**admin, error_queue) == 0);

  // Its first delivery is a first delivery: it counts as the original's first
  // did, and none of the broker's dead-letter bookkeeping came with it.
  auto first = consumer.get(queue);
  REQUIRE(first);
  INFO("headers of the replayed message: " << first->headers.dump());
  CHECK_FALSE(first->redelivered);
  CHECK((first->headers.contains("x-delivery-count") ? first->headers["x-delivery-count"] : json())
        == counts[0]);
  for (auto broker_header : {"x-death", "x-first-death-reason",
                             "x-first-death-queue", "x-first-death-exchange",
                             "x-last-death-reason", "x-last-death-queue", "x-last-death-exchange"})
    CHECK_FALSE(first->headers.contains(broker_header));
  CHECK(first->headers["bus-message-id"] == id);
  CHECK(first->headers["tenant"] == "acme");
  CHECK(first->headers["bus-replay-count"] == "1");
  CHECK(first->headers["bus-replayed-from"] == error_queue);

  // The queue counts afresh: one crash more is the first redelivery, far
  // from the limit, not a second trip to the error queue.
  consumer.requeue(*first);
  auto second = consumer.get(queue);
  REQUIRE(second);
  CHECK(second->headers["x-delivery-count"] == 1);

  // Handled once: acknowledged, and then nowhere.
  consumer.ack(*second);
  CHECK_FALSE(consumer.get(queue));
  CHECK(depth(**admin, queue) == 0);
  CHECK(depth(**admin, error_queue) == 0);
}
