// The bus's page reads, replays and deletes failed messages through the
// transport (bus/failed_messages.hpp): on a real broker, with classic and
// quorum error queues.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/fault.hpp"
#include "rabbitmq_error_queues.hpp"
#include "support/sample_messages.hpp"

using bus::test::order_placed;

namespace {

// Counts what ended, by kind, waking the test.
struct outcomes {
  std::mutex mutex;
  std::condition_variable changed;
  int dead_lettered = 0;
  int handled = 0;

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      std::lock_guard<std::mutex> guard(mutex);
      dead_lettered += e.kind == bus::event_kind::dead_lettered;
      handled += e.kind == bus::event_kind::handled;
      changed.notify_all();
    };
  }

  bool wait_until(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), done);
  }
};

struct out_of_stock : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace

TEST_CASE("on RabbitMQ the page's seam reads the failed messages of an error queue, replays one group home and purges the other") {
  auto queue_type = GENERATE(bus::rabbitmq_queue_type::classic, bus::rabbitmq_queue_type::quorum);
  CAPTURE(queue_type == bus::rabbitmq_queue_type::quorum ? "quorum" : "classic");
  auto settings = bus::test::test_settings();
  settings.queue_type = queue_type;
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto transport = bus::test::connect_transport(settings);
  auto endpoint = bus::test::unique_name("stock");
  auto error_queue = endpoint + "_error";
  std::atomic<bool> fixed{false};
  outcomes seen;

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(transport)
    .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
    .observe(seen.observer())
    .message<order_placed>(bus::test::unique_name("order_placed"))
    .endpoint(endpoint, [&fixed](bus::endpoint_builder& e) {
      e.slots(2).handle<order_placed>([&fixed](const order_placed& m) {
        if (m.amount < 0)
          throw std::invalid_argument("a negative amount");
        if (!fixed)
          throw out_of_stock("no " + m.order_id + " in stock");
      });
    });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  for (int i = 0; i < 3; ++i)
    REQUIRE((*bus)->send(endpoint, order_placed{"o-" + std::to_string(i), 1}));
  for (int i = 0; i < 2; ++i)
    REQUIRE((*bus)->send(endpoint, order_placed{"neg-" + std::to_string(i), -1}));
  REQUIRE(seen.wait_until([&] { return seen.dead_lettered == 5; }));

  auto* access = transport->error_queues();
  REQUIRE(access != nullptr);
  auto* counted = dynamic_cast<bus::detail::rabbitmq_error_queues*>(access);
  REQUIRE(counted != nullptr);

  auto read = access->read(error_queue, 0);
  REQUIRE(read);
  REQUIRE(read->size() == 5);
  for (const auto& m : *read) {
    CHECK(m.queue == error_queue);
    CHECK(m.endpoint == endpoint);
    CHECK(m.original_address == endpoint);
    CHECK_FALSE(m.id.empty());
    CHECK_FALSE(m.failed_at.empty());
    CHECK(m.message_type.find("order_placed") != std::string::npos);
  }
  auto groups = bus::group_failed(*read);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].count == 3);
  CHECK(groups[0].exception_type.find("out_of_stock") != std::string::npos);
  CHECK_THAT(groups[0].example, Catch::StartsWith("no o-"));
  CHECK(groups[1].count == 2);
  CHECK(groups[1].exception_type == "std::invalid_argument");

  // A poll with nothing changed is answered without taking the messages
  // again (on a quorum queue each take counts as a delivery). A quorum queue
  // counts the messages a read gave back as ready again a moment after the
  // read: until then its depth differs, and a read would take them again.
  auto ready = [&] {
    auto count = transport->message_count(error_queue);
    return count && *count == 5;
  };
  auto settle_until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ready() && std::chrono::steady_clock::now() < settle_until)
    std::this_thread::yield();
  REQUIRE(ready());
  auto browsed = counted->browses();
  auto again = access->read(error_queue, 0);
  REQUIRE(again);
  CHECK(again->size() == 5);
  CHECK(counted->browses() == browsed);

  // The cause is fixed: the out_of_stock group goes home and is handled.
  fixed = true;
  auto stock_group = groups[0].exception_type;
  auto replayed = access->replay(
    error_queue, [&](const bus::failed_message& m) { return m.exception_type == stock_group; },
    endpoint, std::chrono::system_clock::now());
  REQUIRE(replayed);
  CHECK(*replayed == 3);
  REQUIRE(seen.wait_until([&] { return seen.handled == 3; }));

  // What is left was read again: the queue changed.
  auto left = access->read(error_queue, 0);
  REQUIRE(left);
  REQUIRE(left->size() == 2);
  CHECK(counted->browses() > browsed);
  for (const auto& m : *left)
    CHECK(m.exception_type == "std::invalid_argument");

  auto purged = access->purge(error_queue, [](const bus::failed_message&) { return true; });
  REQUIRE(purged);
  CHECK(*purged == 2);
  auto none = access->read(error_queue, 0);
  REQUIRE(none);
  CHECK(none->empty());
  CHECK(transport->message_count(error_queue).value() == 0);

  auto missing = access->read(bus::test::unique_name("no_such_queue"), 0);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == bus::errc::unknown_queue);
  (*bus)->stop();
}

TEST_CASE("on RabbitMQ the page's seam does not replay a message read from a stream into the "
          "stream") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto transport = bus::test::connect_transport(settings);
  auto stream = bus::test::unique_name("audit");
  auto error_queue = bus::test::unique_name("projection") + "_error";
  REQUIRE(transport->declare_stream(stream, {}));
  REQUIRE(transport->declare_queue(error_queue));
  bus::envelope failed;
  failed.message_id = "s-1";
  failed.message_type = "order_placed";
  failed.body = bus::message_body::text(R"({"order_id":"s-1","amount":1})");
  bus::fault_details fault;
  fault.original_address = stream;
  fault.stream_offset = 41;
  REQUIRE(transport->send(error_queue, bus::with_fault_headers(failed, fault)));

  auto* access = transport->error_queues();
  REQUIRE(access != nullptr);
  auto replayed = access->replay(
    error_queue, [](const bus::failed_message&) { return true; }, stream,
    std::chrono::system_clock::now());
  REQUIRE_FALSE(replayed);
  CHECK_THAT(replayed.error().message,
             Catch::Contains("replayed 0 of 1")
               && Catch::Contains("read from stream '" + stream + "' at offset 41"));
  auto left = access->read(error_queue, 0);
  REQUIRE(left);
  REQUIRE(left->size() == 1);
  CHECK(left->at(0).stream_offset == "41");
}
