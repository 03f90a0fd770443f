// A stream reader whose connection drops while a handler runs: the reader
// consumes again past the message in flight (the broker never delivers it
// again from there), so that message's ending must still move the saved
// offset. Before, it ended as stale and the offset froze there for good:
// every later message was handled, and a restart read them all again.
#include <catch2/catch.hpp>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "support/eventually.hpp"
#include "support/handler_gate.hpp"
#include "support/sample_messages.hpp"
#include "support/scratch_directory.hpp"
#include "support/tcp_relay.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;
using bus::test::tcp_relay;

namespace {

constexpr int events = 20;
constexpr int held = 3; // the handler of this order waits at a gate while the connection drops

} // namespace

TEST_CASE("a stream offset that freezes: a connection dropped while a handler runs still lets "
          "the saved offset reach the last message, each handled once",
          "[rabbitmq][bus][stream]") {
  auto stream = bus::test::unique_name("drop.audit");
  auto type = bus::test::unique_name("order_placed");
  auto endpoint = bus::test::unique_name("drop.projection");
  auto producer = bus::test::connect_transport(); // appends directly, past the relay
  REQUIRE(producer->declare_stream(stream, {}));

  tcp_relay relay(bus::test::test_settings().port);
  auto settings = bus::test::test_settings();
  settings.host = "127.0.0.1";
  settings.port = relay.port();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto transport = bus::test::connect_transport(settings);

  bus::test::handler_gate hold;
  std::mutex mutex;
  std::map<std::string, int> handled;
  bus::test::scratch_directory offsets;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .stream_offset_directory(offsets.file("offsets"))
    .message<order_placed>(type)
    .stream_endpoint(endpoint, stream,
                     [&](bus::endpoint_builder& e) {
                       e.start_from(bus::stream_start::first())
                         .slots(1)
                         .handle<order_placed>([&](const order_placed& m) {
                           if (m.order_id == "o-" + std::to_string(held) && !hold.pass())
                             throw std::runtime_error("the test never opened the gate");
                           std::lock_guard<std::mutex> guard(mutex);
                           ++handled[m.order_id];
                         });
                     });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());

  for (int i = 1; i <= events; ++i) {
    bus::envelope env;
    env.message_id = "event-" + std::to_string(i);
    env.message_type = type;
    env.sent_at = std::chrono::system_clock::now();
    env.body = bus::message_body::text(R"({"order_id":"o-)" + std::to_string(i)
                                       + R"(","amount":1.0})");
    REQUIRE(producer->send(stream, std::move(env)));
  }

  REQUIRE(hold.wait_inside(1));
  auto before = transport->reconnects();
  relay.drop(); // both connections closed; the transport connects again
  bool back = bus::test::eventually([&] { return transport->reconnects() >= before + 2; }, 30s);
  hold.open();
  REQUIRE(back);

  bool caught_up = bus::test::eventually(
    [&] { return bus.stats(endpoint)->stream_offset == events - 1; }, 30s);
  auto stats = *bus.stats(endpoint);
  INFO("saved offset " << stats.stream_offset << ", lag " << stats.stream_lag);
  CHECK(caught_up);
  std::lock_guard<std::mutex> guard(mutex);
  CHECK(handled.size() == static_cast<std::size_t>(events));
  for (const auto& [order, times] : handled) {
    INFO(order);
    CHECK(times == 1);
  }
  bus.stop();
}
