// The headers a message carries across deliveries come from outside the
// process: each is read with bounds (issue 12, point 4). Tables of header
// texts and what the runtime gets from them.
#include "bus/delivery_history.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bus/header_names.hpp"

namespace h = bus::header;

namespace {

const bus::time_point now = bus::from_unix_ms(1'800'000'000'000);
const std::string endpoint = "billing";

bus::envelope message_with(std::vector<std::pair<std::string_view, std::string>> headers,
                           std::uint32_t delivery_count = 0) {
  bus::envelope m;
  m.message_id = "m-1";
  m.delivery_count = delivery_count;
  for (const auto& [name, value] : headers)
    m.headers.set(name, value);
  return m;
}

// A fault as the runtime describes it when it holds a message back.
bus::fault_details held_back_fault() {
  bus::fault_details f;
  f.exception = {"std::runtime_error", "database down"};
  f.reason = "retries exhausted";
  f.at = bus::from_unix_ms(1'799'999'000'000);
  f.host = "host-1";
  f.process = "1234";
  f.endpoint = endpoint;
  f.original_address = "billing";
  f.immediate_retries = 3;
  f.delivery_count = 2;
  return f;
}

} // namespace

TEST_CASE("a message without history has none: no failures, first failing now, no held-back "
          "fault") {
  const auto history = bus::read_delivery_history(message_with({}), endpoint, now);
  CHECK(history.failed_attempts == 0);
  CHECK_FALSE(history.failed_attempts_out_of_bounds);
  CHECK(history.first_failure == now);
  CHECK_FALSE(history.first_failure_out_of_bounds);
  CHECK_FALSE(history.pending_fault);
  CHECK_FALSE(history.foreign_fault_pending);
  CHECK(history.notes.empty());
}

TEST_CASE("a failed-attempts count out of bounds neither restarts nor overflows the budget") {
  struct row {
    std::string text;
    std::uint32_t delivery_count;
    int failed_attempts;
    bool out_of_bounds;
    std::string note;
  };
  const std::string max = std::to_string(bus::max_failed_attempts);
  const std::vector<row> table = {
      {"0", 0, 0, false, ""},
      {"7", 2, 7, false, ""},
      {max, 9, bus::max_failed_attempts, false, ""},
      {std::to_string(bus::max_failed_attempts + 1), 9, bus::max_failed_attempts, true,
       "bus-failed-attempts '1000001' is above the maximum of 1000000; counted as 1000000"},
      {"2147483647", 3, bus::max_failed_attempts, true,
       "bus-failed-attempts '2147483647' is above the maximum of 1000000; counted as 1000000"},
      {"99999999999999999999999", 3, bus::max_failed_attempts, true,
       "bus-failed-attempts '99999999999999999999999' is above the maximum of 1000000; counted "
       "as 1000000"},
      {"-5", 4, 4, true,
       "bus-failed-attempts '-5' is negative; counted as 4, the message's delivery count"},
      {"-99999999999999999999999", 0, 0, true,
       "bus-failed-attempts '-99999999999999999999999' is negative; counted as 0, the message's "
       "delivery count"},
      {"lots", 2, 2, true,
       "bus-failed-attempts 'lots' is not a number; counted as 2, the message's delivery count"},
      {"", 1, 1, true,
       "bus-failed-attempts '' is not a number; counted as 1, the message's delivery count"},
      {"+3", 1, 1, true,
       "bus-failed-attempts '+3' is not a number; counted as 1, the message's delivery count"},
      {"3 ", 1, 1, true,
       "bus-failed-attempts '3 ' is not a number; counted as 1, the message's delivery count"},
      {"x", std::numeric_limits<std::uint32_t>::max(), bus::max_failed_attempts, true,
       "bus-failed-attempts 'x' is not a number; counted as 1000000, the message's delivery "
       "count"},
  };
  for (const auto& r : table) {
    INFO("'" << r.text << "'");
    const auto history = bus::read_delivery_history(
        message_with({{h::failed_attempts, r.text}}, r.delivery_count), endpoint, now);
    CHECK(history.failed_attempts == r.failed_attempts);
    CHECK(history.failed_attempts_out_of_bounds == r.out_of_bounds);
    CHECK(history.notes == (r.note.empty() ? std::vector<std::string>{}
                                           : std::vector<std::string>{r.note}));
    // The budget the policy sees never wraps around.
    CHECK(history.total_attempts(std::numeric_limits<int>::max())
          == std::numeric_limits<int>::max());
    CHECK(history.total_attempts(3) == r.failed_attempts + 3);
  }
}

TEST_CASE("a first-failure time is never before the epoch nor after now") {
  struct row {
    std::string text;
    bus::time_point first_failure;
    bool out_of_bounds;
    std::string note;
  };
  const auto now_ms = std::to_string(bus::to_unix_ms(now));
  const std::vector<row> table = {
      {"1799999000000", bus::from_unix_ms(1'799'999'000'000), false, ""},
      {"0", bus::time_point{}, false, ""},
      {now_ms, now, false, ""},
      {"-1", bus::time_point{}, true,
       "bus-first-failure-at '-1' is before the epoch; taken as the epoch"},
      {"-99999999999999999999", bus::time_point{}, true,
       "bus-first-failure-at '-99999999999999999999' is before the epoch; taken as the epoch"},
      {std::to_string(bus::to_unix_ms(now) + 1), now, true,
       "bus-first-failure-at '1800000000001' is after now; taken as now"},
      {"9223372036854775807", now, true,
       "bus-first-failure-at '9223372036854775807' is after now; taken as now"},
      {"99999999999999999999", now, true,
       "bus-first-failure-at '99999999999999999999' is after now; taken as now"},
      {"yesterday", now, true, "bus-first-failure-at 'yesterday' is not a number; taken as now"},
      {"2025-11-22T08:26:40.123Z", now, true,
       "bus-first-failure-at '2025-11-22T08:26:40.123Z' is not a number; taken as now"},
  };
  for (const auto& r : table) {
    INFO("'" << r.text << "'");
    const auto history =
        bus::read_delivery_history(message_with({{h::first_failure_at, r.text}}), endpoint, now);
    CHECK(history.first_failure == r.first_failure);
    CHECK(history.first_failure_out_of_bounds == r.out_of_bounds);
    CHECK(history.notes == (r.note.empty() ? std::vector<std::string>{}
                                           : std::vector<std::string>{r.note}));
  }
}

TEST_CASE("a held-back fault is honoured only on its own endpoint and only when its headers parse") {
  const auto held = bus::with_pending_fault(message_with({}), held_back_fault());
  CHECK(held.headers.find(h::fault_pending) == std::optional<std::string_view>("billing"));

  SECTION("its own endpoint: the fault, read back, and no note") {
    const auto history = bus::read_delivery_history(held, endpoint, now);
    REQUIRE(history.pending_fault);
    CHECK_FALSE(history.foreign_fault_pending);
    CHECK(history.notes.empty());
    const auto& f = *history.pending_fault;
    CHECK(f.exception.type == "std::runtime_error");
    CHECK(f.exception.message == "database down");
    CHECK(f.reason == "retries exhausted");
    CHECK(f.at == bus::from_unix_ms(1'799'999'000'000));
    CHECK(f.endpoint == "billing");
    CHECK(f.original_address == "billing");
    CHECK(f.immediate_retries == 3);
    CHECK(f.delivery_count == 2);
  }

  struct row {
    const char* what;
    std::string_view header;
    std::optional<std::string> value; // empty: the header removed
    std::string note;
  };
  const std::vector<row> table = {
      {"another endpoint's", h::fault_pending, "shipping",
       "bus-fault-pending 'shipping' does not name this endpoint ('billing'); ignored, the "
       "handler runs"},
      {"the old marker", h::fault_pending, "1",
       "bus-fault-pending '1' does not name this endpoint ('billing'); ignored, the handler runs"},
      {"empty", h::fault_pending, "",
       "bus-fault-pending '' does not name this endpoint ('billing'); ignored, the handler runs"},
      {"no exception type", h::fault_exception_type, std::nullopt,
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-exception-type is missing); ignored, the handler runs"},
      {"an empty exception type", h::fault_exception_type, "",
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-exception-type is empty); ignored, the handler runs"},
      {"a negative retry count", h::fault_immediate_retries, "-1",
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-immediate-retries '-1' is not a count in [0, 1000000]); ignored, the handler "
       "runs"},
      {"a delivery count beyond 32 bits", h::fault_delivery_count, "4294967296",
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-delivery-count '4294967296' is not a count in [0, 4294967295]); ignored, the "
       "handler runs"},
      {"a fault time that is not a time", h::fault_at, "t",
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-at 't' is not a UTC time in [1970, 2200]); ignored, the handler runs"},
      {"a fault time beyond 2200", h::fault_at, "3000-01-01T00:00:00.000Z",
       "bus-fault-pending 'billing' names this endpoint but its fault headers do not parse "
       "(bus-fault-at '3000-01-01T00:00:00.000Z' is not a UTC time in [1970, 2200]); ignored, "
       "the handler runs"},
      {"a fault of another endpoint", h::fault_endpoint, "shipping",
       "bus-fault-pending 'billing' names this endpoint but bus-fault-endpoint is 'shipping'; "
       "ignored, the handler runs"},
  };
  for (const auto& r : table) {
    INFO(r.what);
    auto message = held;
    if (r.value)
      message.headers.set(r.header, *r.value);
    else
      message.headers.erase(r.header);
    const auto history = bus::read_delivery_history(message, endpoint, now);
    CHECK_FALSE(history.pending_fault);
    CHECK(history.foreign_fault_pending);
    CHECK(history.notes == std::vector<std::string>{r.note});
  }
}

TEST_CASE("a held-back fault's time after now is taken as now") {
  auto fault = held_back_fault();
  fault.at = now + std::chrono::hours(1);
  const auto history = bus::read_delivery_history(
      bus::with_pending_fault(message_with({}), fault), endpoint, now);
  REQUIRE(history.pending_fault);
  CHECK(history.pending_fault->at == now);
}

TEST_CASE("fault headers read strictly say which header does not parse") {
  const auto faulted = bus::with_fault_headers(message_with({}), held_back_fault());
  REQUIRE(bus::read_fault_headers(faulted, now));
  auto without_reason = faulted;
  without_reason.headers.erase(h::fault_reason);
  const auto read = bus::read_fault_headers(without_reason, now);
  REQUIRE_FALSE(read);
  CHECK(read.error().code == bus::errc::malformed_message);
  CHECK(read.error().message == "bus-fault-reason is missing");
}

TEST_CASE("a long foreign header is quoted in its note cut to 64 bytes") {
  const std::string long_name(200, 'x');
  const auto history = bus::read_delivery_history(
      message_with({{h::fault_pending, long_name}}), endpoint, now);
  REQUIRE(history.notes.size() == 1);
  CHECK(history.notes[0].size() < 200);
  CHECK(history.notes[0].find("...(truncated)'") != std::string::npos);
}

TEST_CASE("the redelivery copy carries the history on, bounded") {
  struct row {
    const char* what;
    std::vector<std::pair<std::string_view, std::string>> headers;
    std::uint32_t delivery_count;
    int attempts;
    std::string failed_attempts;
    std::string first_failure_at;
    std::uint32_t next_delivery_count;
  };
  const auto now_ms = std::to_string(bus::to_unix_ms(now));
  const std::vector<row> table = {
      {"the first failed delivery", {}, 0, 4, "4", now_ms, 1},
      {"a later one", {{h::failed_attempts, "8"}, {h::first_failure_at, "1799000000000"}}, 2, 4,
       "12", "1799000000000", 3},
      {"a count at the maximum", {{h::failed_attempts, "99999999999"}}, 5, 4,
       std::to_string(bus::max_failed_attempts), now_ms, 6},
      {"a delivery count at its maximum", {}, std::numeric_limits<std::uint32_t>::max(), 1, "1",
       now_ms, std::numeric_limits<std::uint32_t>::max()},
  };
  for (const auto& r : table) {
    INFO(r.what);
    const auto message = message_with(r.headers, r.delivery_count);
    const auto history = bus::read_delivery_history(message, endpoint, now);
    const auto copy = bus::with_failed_delivery(message, history, r.attempts);
    CHECK(copy.delivery_count == r.next_delivery_count);
    CHECK(copy.headers.find(h::failed_attempts)
          == std::optional<std::string_view>(r.failed_attempts));
    CHECK(copy.headers.find(h::first_failure_at)
          == std::optional<std::string_view>(r.first_failure_at));
  }
}
