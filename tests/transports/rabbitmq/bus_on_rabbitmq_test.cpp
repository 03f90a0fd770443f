// The bus's runtime on a real broker: what the error and skipped queues
// on RabbitMQ hold after a failure and an unhandled message.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/header_names.hpp"
#include "support/delivery_collector.hpp"
#include "support/envelope_text.hpp"
#include "support/sample_messages.hpp"

using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

using bus::test::header_or_missing;

// Counts the messages that ended, whatever the end, waking the test.
struct endings {
  std::mutex mutex;
  std::condition_variable changed;
  int count = 0;

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      if (e.kind == bus::event_kind::dead_lettered || e.kind == bus::event_kind::skipped
          || e.kind == bus::event_kind::handled) {
        std::lock_guard<std::mutex> guard(mutex);
        ++count;
        changed.notify_all();
      }
    };
  }

  bool wait_for(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return count >= n; });
  }
};

} // namespace

TEST_CASE("on RabbitMQ a failed message lands on the error queue with fault headers and an unhandled one on the skipped queue") {
  auto endpoint = bus::test::unique_name("billing");
  endings ended;
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    bus::bus_builder b{sys};
    b.transport(bus::test::connect_with_defaults())
        .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
        .observe(ended.observer())
        .message<order_placed>(bus::test::unique_name("order_placed"))
        .message<invoice_requested>(bus::test::unique_name("invoice_requested"))
        .endpoint(endpoint, [](bus::endpoint_builder& e) {
          e.slots(2).handle<order_placed>([](const order_placed& m) {
            if (m.amount < 0)
              throw std::out_of_range("no such customer");
          });
        });
    auto bus = b.build();
    REQUIRE(bus);
    REQUIRE((*bus)->start());
    REQUIRE((*bus)->send(endpoint, order_placed{"good", 1}));
    REQUIRE((*bus)->send(endpoint, order_placed{"bad", -1}));
    REQUIRE((*bus)->send(endpoint, invoice_requested{"i-1", {"line"}}));
    REQUIRE(ended.wait_for(3));
    (*bus)->stop();
    auto s = *(*bus)->stats(endpoint);
    CHECK(s.handled == 1);
    CHECK(s.dead_lettered == 1);
    CHECK(s.skipped == 1);
  }

  // Read both queues back from the broker with a transport of our own.
  auto reader = bus::test::connect_with_defaults();
  bus::test::delivery_collector errors, skipped;
  REQUIRE(reader->consume(endpoint + "_error", 10, errors.handler()));
  REQUIRE(reader->consume(endpoint + "_skipped", 10, skipped.handler()));
  REQUIRE(errors.wait_for(1));
  REQUIRE(skipped.wait_for(1));
  const auto& failed = *errors.items().at(0).message;
  namespace h = bus::header;
  CHECK(header_or_missing(failed, h::fault_exception_type) == "std::out_of_range");
  CHECK(header_or_missing(failed, h::fault_message) == "no such customer");
  CHECK(header_or_missing(failed, h::fault_endpoint) == endpoint);
  CHECK(header_or_missing(failed, h::fault_original_address) == endpoint);
  CHECK(header_or_missing(failed, h::fault_host) != "<missing>");
  CHECK(nlohmann::json::parse(*failed.body.to_json_text())["order_id"] == "bad");
  const auto& unhandled = *skipped.items().at(0).message;
  CHECK_THAT(header_or_missing(unhandled, h::skipped_reason), Catch::Contains("has no handler"));
  CHECK(nlohmann::json::parse(*unhandled.body.to_json_text())["order_id"] == "i-1");
  for (const auto& d : errors.items())
    CHECK(reader->ack(d.tag));
  for (const auto& d : skipped.items())
    CHECK(reader->ack(d.tag));
  // Exactly one each: nothing was parked twice.
  CHECK(errors.size() == 1);
  CHECK(skipped.size() == 1);
}
