// The headers ServiceControl reads from an error queue, written on the
// bus's error-queue copy, against NServiceBus's own failed message (the
// golden file, tests/interop/golden/nservicebus_failed_headers.json); and a
// retry from ServicePulse starting over.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "bus/header_names.hpp"
#include "bus/nservicebus.hpp"
#include "bus/servicecontrol.hpp"
#include "interop/golden.hpp"
#include "support/envelope_text.hpp"

namespace sc = bus::servicecontrol;

namespace {

using bus::test::header_or_missing;

bus::time_point at(const char* iso) {
  auto t = bus::from_iso8601(iso);
  REQUIRE(t);
  return *t;
}

bus::envelope sent_by_sales() {
  bus::envelope e;
  e.message_id = "m-1";
  e.message_type = "order_placed";
  e.correlation_id = "c-1";
  e.sent_at = at("2024-05-01T12:00:00.123Z");
  e.source_address = "sales";
  e.response_address = "sales_replies";
  e.delivery_count = 2;
  e.body = bus::message_body::text(R"({"order_id":"o-1"})");
  return e;
}

bus::fault_details failure() {
  bus::fault_details f;
  f.exception = {"billing::payment_declined", "Payment provider unavailable"};
  f.reason = "retries exhausted";
  f.at = at("2024-05-01T12:00:41.230Z");
  f.host = "billing01";
  f.process = "4242";
  f.endpoint = "billing";
  f.original_address = "billing";
  f.immediate_retries = 3;
  f.delivery_count = 2;
  return f;
}

bus::envelope failed_copy(const bus::envelope& msg) {
  return sc::with_failed_headers(bus::with_fault_headers(msg, failure()), failure());
}

} // namespace

TEST_CASE("NServiceBus's time is written to the microsecond in its own format") {
  auto t = at("2024-05-01T12:00:41.230Z") + std::chrono::microseconds(83);
  CHECK(bus::nservicebus::format_time(t) == "2024-05-01 12:00:41:230083 Z");
  CHECK(bus::nservicebus::parse_time(bus::nservicebus::format_time(t))
        == at("2024-05-01T12:00:41.230Z"));
}

TEST_CASE("a failure of the bus's own carries every header of NServiceBus's failed message that "
          "ServiceControl reads, in its formats",
          "[servicecontrol]") {
  auto golden = nlohmann::json::parse(bus::test::golden("nservicebus_failed_headers.json"));
  auto copy = failed_copy(sent_by_sales());
  // Each header NServiceBus writes on a failure and ServiceControl reads
  // (nservicebus_message.md, section 6) is written, as text.
  for (const auto* name :
       {"NServiceBus.FailedQ", "NServiceBus.MessageId", "NServiceBus.TimeOfFailure",
        "NServiceBus.ExceptionInfo.ExceptionType", "NServiceBus.ExceptionInfo.Message",
        "NServiceBus.ExceptionInfo.Source", "NServiceBus.ExceptionInfo.StackTrace",
        "NServiceBus.EnclosedMessageTypes", "NServiceBus.ProcessingEndpoint",
        "NServiceBus.ProcessingMachine", "NServiceBus.OriginatingEndpoint",
        "$.diagnostics.hostdisplayname", "NServiceBus.MessageIntent", "NServiceBus.ConversationId",
        "NServiceBus.ContentType", "NServiceBus.TimeSent", "NServiceBus.ReplyToAddress"}) {
    INFO(name);
    REQUIRE(golden["headers"].contains(name));
    CHECK(header_or_missing(copy, name) != "<missing>");
  }
  CHECK(header_or_missing(copy, "NServiceBus.FailedQ") == "billing");
  CHECK(header_or_missing(copy, "NServiceBus.ProcessingEndpoint") == "billing");
  CHECK(header_or_missing(copy, "NServiceBus.ProcessingMachine") == "billing01");
  CHECK(header_or_missing(copy, "$.diagnostics.hostdisplayname") == "billing01");
  CHECK(header_or_missing(copy, "NServiceBus.MessageId") == "m-1");
  CHECK(header_or_missing(copy, "NServiceBus.EnclosedMessageTypes") == "order_placed");
  CHECK(header_or_missing(copy, "NServiceBus.ConversationId") == "c-1");
  CHECK(header_or_missing(copy, "NServiceBus.OriginatingEndpoint") == "sales");
  CHECK(header_or_missing(copy, "NServiceBus.ReplyToAddress") == "sales_replies");
  CHECK(header_or_missing(copy, "NServiceBus.MessageIntent") == "Send");
  CHECK(header_or_missing(copy, "NServiceBus.ContentType") == "application/json");
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.ExceptionType")
        == "billing::payment_declined");
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.Message")
        == "Payment provider unavailable");
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.Source") == "billing");
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.StackTrace")
        == "billing::payment_declined: Payment provider unavailable");
  CHECK(header_or_missing(copy, "NServiceBus.TimeOfFailure") == "2024-05-01 12:00:41:230000 Z");
  CHECK(header_or_missing(copy, "NServiceBus.TimeSent") == "2024-05-01 12:00:00:123000 Z");
  CHECK(header_or_missing(copy, "NServiceBus.Retries") == "2");
  CHECK(header_or_missing(copy, "NServiceBus.FLRetries") == "3");
  // The formats are NServiceBus's: ServiceControl checks the length and
  // the digits of a time.
  for (const auto* name : {"NServiceBus.TimeOfFailure", "NServiceBus.TimeSent"})
    CHECK(header_or_missing(copy, name).size()
          == golden["headers"][name].get<std::string>().size());
  // The bus's own fault facts stay beside them.
  CHECK(header_or_missing(copy, bus::header::fault_exception_type) == "billing::payment_declined");
}

TEST_CASE("what an NServiceBus sender wrote stays on its failure", "[servicecontrol]") {
  auto golden = nlohmann::json::parse(bus::test::golden("nservicebus_failed_headers.json"));
  auto msg = sent_by_sales();
  for (const auto* name :
       {"NServiceBus.MessageId", "NServiceBus.EnclosedMessageTypes", "NServiceBus.ConversationId",
        "NServiceBus.MessageIntent", "NServiceBus.TimeSent", "NServiceBus.OriginatingEndpoint"})
    msg.headers.set(name, golden["headers"][name].get<std::string>());
  auto copy = failed_copy(msg);
  CHECK(header_or_missing(copy, "NServiceBus.MessageId") == "8f1b5c2e-3a4d-4e7f-9b1a-b17c00c5a2f1");
  CHECK(header_or_missing(copy, "NServiceBus.EnclosedMessageTypes")
        == golden["headers"]["NServiceBus.EnclosedMessageTypes"]);
  CHECK(header_or_missing(copy, "NServiceBus.MessageIntent") == "Publish");
  CHECK(header_or_missing(copy, "NServiceBus.TimeSent") == "2024-05-01 12:00:00:123456 Z");
  CHECK(header_or_missing(copy, "NServiceBus.OriginatingEndpoint") == "Sales");
}

TEST_CASE("long exception texts are cut to the fault limits", "[servicecontrol]") {
  auto f = failure();
  f.exception.message = std::string(10000, 'x');
  auto copy = sc::with_failed_headers(sent_by_sales(), f, bus::fault_limits{100});
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.Message").size() == 100);
  CHECK(header_or_missing(copy, "NServiceBus.ExceptionInfo.StackTrace").size() == 100);
}

TEST_CASE("a retry from ServicePulse starts over, and the bus's own redeliveries of it do not",
          "[servicecontrol]") {
  auto failed = failed_copy(sent_by_sales());
  failed.headers.set(bus::header::failed_attempts, "6");
  failed.headers.set(bus::header::first_failure_at, "1714564800000");
  failed.headers.set(bus::header::delivery_count, "2");
  SECTION("a message without ServiceControl's retry header is as it came") {
    CHECK_FALSE(sc::as_fresh_attempt(failed));
  }
  failed.headers.set(sc::header::retry_id, "5a1d7c2e");
  SECTION("retried: no fault facts, no attempt history, delivery count 0") {
    auto fresh = sc::as_fresh_attempt(failed);
    REQUIRE(fresh);
    CHECK(fresh->delivery_count == 0);
    CHECK(fresh->message_id == "m-1");
    CHECK(header_or_missing(*fresh, sc::header::retry_id) == "5a1d7c2e");
    for (const auto& [name, value] : fresh->headers) {
      INFO(name);
      CHECK(name.rfind("bus-fault-", 0) != 0);
      CHECK(name != bus::header::failed_attempts);
      CHECK(name != bus::header::first_failure_at);
      CHECK(name != bus::header::delivery_count);
    }
    SECTION("the bus's redelivery of the retried message keeps its count") {
      auto redelivered = *fresh;
      redelivered.delivery_count = 1;
      redelivered.headers.set(bus::header::delivery_count, "1");
      CHECK_FALSE(sc::as_fresh_attempt(redelivered));
    }
  }
  SECTION("a failure held back for its error queue keeps its decided fate") {
    failed.headers.set(bus::header::fault_pending, "1");
    CHECK_FALSE(sc::as_fresh_attempt(failed));
  }
}

TEST_CASE("a retry that was handled is acknowledged to ServiceControl as NServiceBus does",
          "[servicecontrol]") {
  auto handled = sent_by_sales();
  auto now = at("2024-05-01T12:05:00.000Z");
  CHECK_FALSE(sc::retry_acknowledgement(handled, now, "a-1", "billing"));
  handled.headers.set(sc::header::retry_id, "5a1d7c2e");
  CHECK_FALSE(sc::retry_acknowledgement(handled, now, "a-1", "billing")); // no queue to tell
  handled.headers.set(sc::header::retry_acknowledgement_queue, "error");
  auto ack = sc::retry_acknowledgement(handled, now, "a-1", "billing");
  REQUIRE(ack);
  CHECK(ack->queue == "error");
  CHECK(ack->message.message_id == "a-1");
  CHECK(ack->message.source_address == "billing");
  CHECK(header_or_missing(ack->message, "ServiceControl.Retry.Successful")
        == "2024-05-01 12:05:00:000000 Z");
  CHECK(header_or_missing(ack->message, "ServiceControl.Retry.UniqueMessageId") == "5a1d7c2e");
  CHECK(header_or_missing(ack->message, "NServiceBus.ControlMessage") == "True");
  CHECK(ack->message.body.text_size() == 0);
}
