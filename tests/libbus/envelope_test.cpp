#include <catch2/catch.hpp>

#include <regex>

#include "bus/envelope.hpp"
#include "bus/exception_info.hpp"
#include "bus/fault.hpp"
#include "bus/header_names.hpp"

TEST_CASE("message ids are version 4 UUIDs made from the words given") {
  auto id = bus::make_message_id(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
  CHECK(id == "01234567-89ab-4def-bedc-ba9876543210");
  CHECK(std::regex_match(bus::make_message_id(~0ULL, ~0ULL),
                         std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  CHECK(bus::make_message_id(1, 2) != bus::make_message_id(1, 3));
  CHECK(bus::make_message_id(0, 0) == "00000000-0000-4000-8000-000000000000");
  CHECK(bus::make_message_id(~0ULL, ~0ULL) == "ffffffff-ffff-4fff-bfff-ffffffffffff");
}

namespace {
struct not_a_std_exception {
  int code;
};
} // namespace

TEST_CASE("an exception is described by its dynamic type and message, std::exception or not") {
  auto std_one = bus::describe(std::make_exception_ptr(std::out_of_range("index 7")));
  CHECK(std_one.type == "std::out_of_range");
  CHECK(std_one.message == "index 7");

  auto plain = bus::describe(std::make_exception_ptr(not_a_std_exception{3}));
  CHECK(plain.type == "(anonymous namespace)::not_a_std_exception");
  CHECK(plain.message.find("not derived from std::exception") != std::string::npos);

  CHECK(bus::describe(std::make_exception_ptr(42)).type == "int");
  CHECK(bus::describe(nullptr).type == "none");
}

TEST_CASE("fault headers say what failed, where, and after how many attempts") {
  bus::envelope msg;
  msg.message_id = "m-1";
  msg.headers.set("tenant", "acme");
  bus::fault_details f;
  f.exception = {"db_error", "deadlock"};
  f.reason = "retries exhausted";
  f.at = bus::from_unix_ms(1'700'000'000'000);
  f.host = "host-a";
  f.process = "4242";
  f.endpoint = "billing";
  f.original_address = "billing";
  f.immediate_retries = 3;
  f.delivery_count = 2;
  auto out = bus::with_fault_headers(msg, f);
  namespace h = bus::header;
  CHECK(out.headers.find(h::fault_exception_type) == std::optional<std::string_view>("db_error"));
  CHECK(out.headers.find(h::fault_message) == std::optional<std::string_view>("deadlock"));
  CHECK(out.headers.find(h::fault_reason) == std::optional<std::string_view>("retries exhausted"));
  CHECK(out.headers.find(h::fault_at) == std::optional<std::string_view>("2023-11-14T22:13:20.000Z"));
  CHECK(out.headers.find(h::fault_host) == std::optional<std::string_view>("host-a"));
  CHECK(out.headers.find(h::fault_endpoint) == std::optional<std::string_view>("billing"));
  CHECK(out.headers.find(h::fault_immediate_retries) == std::optional<std::string_view>("3"));
  CHECK(out.headers.find(h::fault_delivery_count) == std::optional<std::string_view>("2"));
  CHECK(out.headers.find("tenant") == std::optional<std::string_view>("acme"));
}

TEST_CASE("a long fault message is cut to the limit without splitting a UTF-8 character") {
  std::string text(10, 'a');
  for (int i = 0; i < 10; ++i)
    text += "\xc3\xa9"; // 'é', two bytes: 30 bytes in all
  // A limit of 25 leaves 11 bytes before the 14-byte marker: byte 11 is the
  // middle of the first 'é', so the cut steps back to its start.
  auto cut = bus::truncate_utf8(text, 25);
  CHECK(cut == std::string(10, 'a') + "...(truncated)");
  CHECK(bus::truncate_utf8("short", 25) == "short");
  CHECK(bus::truncate_utf8(std::string(100, 'x'), 20).size() <= 20);

  bus::fault_details f;
  f.exception = {"e", std::string(10'000, 'x')};
  auto out = bus::with_fault_headers(bus::envelope{}, f, bus::fault_limits{64});
  CHECK(out.headers.find(bus::header::fault_message)->size() == 64);
}

TEST_CASE("the error copy of a message read from a stream says its offset, and a queue's does not") {
  namespace h = bus::header;
  bus::envelope msg;
  bus::fault_details f;
  f.original_address = "audit";
  f.stream_offset = 41;
  auto from_stream = bus::with_fault_headers(msg, f);
  CHECK(from_stream.headers.find(h::fault_stream_offset) == std::optional<std::string_view>("41"));
  CHECK(bus::fault_from_headers(from_stream).stream_offset == std::optional<std::uint64_t>(41));

  // Written again for a queue's failure (a replayed copy that failed once
  // more, say), an earlier stream offset does not survive.
  f.stream_offset.reset();
  auto from_queue = bus::with_fault_headers(from_stream, f);
  CHECK_FALSE(from_queue.headers.contains(h::fault_stream_offset));
  CHECK_FALSE(bus::fault_from_headers(from_queue).stream_offset);
}
