// ServiceControl's error-queue convention on a real broker: a bus that
// writes its headers (bus_builder::servicecontrol_error_headers) puts on a
// failure every header ServiceControl reads, as text, in NServiceBus's
// formats; and a retry from ServicePulse, sent back to the FailedQ as
// ServiceControl sends it (tests/interop/golden/nservicebus_message.md,
// section 6), is handled as a fresh attempt and acknowledged. A rabbitmq-c
// client stands in for ServiceControl.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "bus/nservicebus.hpp"
#include "bus/servicecontrol.hpp"
#include "interop/golden.hpp"
#include "raw_client.hpp"
#include "support/eventually.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::order_placed;

namespace {

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// What ServiceControl sends back to the FailedQ on a retry: the failed
// message's headers without its failure facts, with its retry headers; the
// AMQP message id is the id ServiceControl stored it under.
bus::test::raw_message as_servicecontrol_retries(const bus::test::raw_got& failed,
                                                 const std::string& error_queue) {
  bus::test::raw_message m;
  for (const auto& [name, value] : failed.headers)
    if (!starts_with(name, "NServiceBus.Retries") && name != "NServiceBus.FailedQ"
        && name != "NServiceBus.TimeOfFailure" && !starts_with(name, "NServiceBus.ExceptionInfo.")
        && name != "ServiceControl.EditOf")
      m.headers.emplace_back(name, value);
  m.headers.emplace_back("ServiceControl.Retry.UniqueMessageId",
                         "5a1d7c2e-0b3f-4e4a-8c1d-2f6e9b7a3c10");
  m.headers.emplace_back("ServiceControl.Retry.AcknowledgementQueue", error_queue);
  m.message_id = "servicecontrol-stored-id";
  m.content_type = failed.content_type;
  m.body = failed.body;
  return m;
}

} // namespace

TEST_CASE("on RabbitMQ a failure carries every header ServiceControl reads, and a retry from "
          "ServicePulse starts over and is acknowledged",
          "[foreign][nservicebus][servicecontrol]") {
  auto settings = bus::test::test_settings();
  settings.log = [](bus::rabbitmq_log_level, const std::string&) {};
  auto endpoint = bus::test::unique_name("sc_billing");
  auto error_queue = endpoint + "_error";
  auto registered = bus::test::unique_name("order_placed");
  std::atomic<bool> failing{true};
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bus::envelope> handled;

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport(settings))
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .servicecontrol_error_headers()
      .message<order_placed>(registered)
      // One immediate retry and one redelivery: the error-queue copy carries
      // a delivery count and attempt history a retry must not inherit.
      .add_resilience([](bus::policy_builder& p) {
        p.on_any().retry({10ms}).then_redeliver({100ms}).jitter(false);
      })
      .endpoint(endpoint, [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed&, bus::handler_context& ctx) {
          if (failing)
            throw std::invalid_argument("payment provider unavailable");
          std::lock_guard<std::mutex> guard(mutex);
          handled.push_back(ctx.message());
          changed.notify_all();
        });
      });
  auto bus = b.build();
  REQUIRE(bus);
  REQUIRE((*bus)->start());
  REQUIRE((*bus)->send(endpoint, order_placed{"o-1", 12.5}));

  bus::test::raw_got failed;
  REQUIRE(bus::test::eventually(
      [&] { return (failed = bus::test::raw_get(settings, error_queue, true)).found; }, 30s, 50ms));
  auto header = [&](const std::string& name) {
    auto it = failed.headers.find(name);
    return it == failed.headers.end() ? std::string("<missing>") : it->second;
  };
  // Every header of NServiceBus's own failed message (the golden file)
  // that ServiceControl reads is there.
  auto golden = nlohmann::json::parse(bus::test::golden("nservicebus_failed_headers.json"));
  for (const auto* name :
       {"NServiceBus.FailedQ", "NServiceBus.MessageId", "NServiceBus.TimeOfFailure",
        "NServiceBus.ExceptionInfo.ExceptionType", "NServiceBus.ExceptionInfo.Message",
        "NServiceBus.ExceptionInfo.Source", "NServiceBus.ExceptionInfo.StackTrace",
        "NServiceBus.EnclosedMessageTypes", "NServiceBus.ProcessingEndpoint",
        "NServiceBus.ProcessingMachine", "NServiceBus.OriginatingEndpoint",
        "$.diagnostics.hostdisplayname", "NServiceBus.MessageIntent", "NServiceBus.ConversationId",
        "NServiceBus.ContentType", "NServiceBus.TimeSent"}) {
    INFO(name);
    REQUIRE(golden["headers"].contains(name));
    CHECK(header(name) != "<missing>");
  }
  CHECK(header("NServiceBus.FailedQ") == endpoint);
  CHECK(header("NServiceBus.ProcessingEndpoint") == endpoint);
  CHECK(header("NServiceBus.MessageId") == header("bus-message-id"));
  CHECK(header("NServiceBus.EnclosedMessageTypes") == registered);
  CHECK(header("NServiceBus.ExceptionInfo.ExceptionType") == "std::invalid_argument");
  CHECK(header("NServiceBus.ExceptionInfo.Message") == "payment provider unavailable");
  CHECK(header("NServiceBus.ExceptionInfo.StackTrace")
        == "std::invalid_argument: payment provider unavailable");
  CHECK(header("NServiceBus.ContentType") == "application/json");
  CHECK(header("NServiceBus.MessageIntent") == "Send");
  // ServiceControl checks the time format's length and digits.
  for (const auto* name : {"NServiceBus.TimeOfFailure", "NServiceBus.TimeSent"}) {
    INFO(name << " = " << header(name));
    CHECK(header(name).size() == golden["headers"][name].get<std::string>().size());
    CHECK(bus::nservicebus::parse_time(header(name)));
  }
  // The counters: one redelivery, one immediate retry in the last delivery.
  CHECK(header("NServiceBus.Retries") == "1");
  CHECK(header("NServiceBus.FLRetries") == "1");

  // ServicePulse retries it, the handler works now.
  failing = false;
  bus::test::raw_publish(settings, endpoint, as_servicecontrol_retries(failed, error_queue));
  {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, 30s, [&] { return handled.size() == 1; }));
  }
  (*bus)->stop();
  const auto& retried = handled.front();
  CHECK(retried.message_id == header("bus-message-id"));
  CHECK(retried.delivery_count == 0);
  CHECK(retried.headers.find("ServiceControl.Retry.UniqueMessageId"));
  for (const auto& [name, value] : retried.headers) {
    INFO(name << " = " << value);
    CHECK_FALSE(starts_with(name, "bus-fault-"));
    CHECK(name != "bus-failed-attempts");
    CHECK(name != "bus-first-failure-at");
  }
  // ServiceControl is told the retry worked, on the queue it named.
  bus::test::raw_got ack;
  REQUIRE(bus::test::eventually(
      [&] { return (ack = bus::test::raw_get(settings, error_queue, true)).found; }, 30s, 50ms));
  CHECK(ack.headers["ServiceControl.Retry.UniqueMessageId"]
        == "5a1d7c2e-0b3f-4e4a-8c1d-2f6e9b7a3c10");
  CHECK(ack.headers["NServiceBus.ControlMessage"] == "True");
  CHECK(bus::nservicebus::parse_time(ack.headers["ServiceControl.Retry.Successful"]));
  CHECK(ack.body.empty());
  CHECK_FALSE(bus::test::raw_get(settings, error_queue, true).found); // nothing else
}
