#include <catch2/catch.hpp>

#include <string>

#include "bus/trace_context.hpp"

using bus::format_traceparent;
using bus::parse_traceparent;

namespace {
constexpr const char* valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
} // namespace

TEST_CASE("a version-00 traceparent reads and formats back unchanged") {
  auto context = parse_traceparent(valid);
  REQUIRE(context);
  CHECK(bus::to_hex(context->trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(bus::to_hex(context->parent) == "00f067aa0ba902b7");
  CHECK(context->flags == 0x01);
  CHECK(format_traceparent(*context) == valid);
}

TEST_CASE("a malformed traceparent reads as none") {
  auto text = GENERATE(as<std::string>{},
    "",                                                          // empty
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    // short
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // v00 with more
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
    "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // not hex
    "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
    "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01",   // not hex in id
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"); // later version, no '-'
  CAPTURE(text);
  CHECK_FALSE(parse_traceparent(text).has_value());
}

TEST_CASE("a later version is read by its first four fields and written as 00") {
  auto context = parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what");
  REQUIRE(context);
  CHECK(format_traceparent(*context) == valid);
}

TEST_CASE("a new trace is sampled and never has an all-zero id") {
  auto zero = bus::new_trace(0, 0, 0);
  CHECK(parse_traceparent(format_traceparent(zero)) == zero);
  auto drawn = bus::new_trace(0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x1122334455667788ULL);
  CHECK(format_traceparent(drawn) == "00-0123456789abcdeffedcba9876543210-1122334455667788-01");
}

TEST_CASE("an untraced message's trace is derived from its id alone") {
  auto a = bus::trace_for_untraced("m-1");
  CHECK(a == bus::trace_for_untraced("m-1"));
  CHECK(a.trace != bus::trace_for_untraced("m-2").trace);
  CHECK(a.parent == bus::span_id{}); // no parent: its first span is a root
  // A child of it is a valid traceparent.
  auto span = bus::attempt_span_id(a.trace, "m-1", 0, 1, 0);
  CHECK(parse_traceparent(format_traceparent(bus::child_of(a, span))).has_value());
}

TEST_CASE("each attempt has its own span id, the same however often it is derived") {
  auto trace = parse_traceparent(valid)->trace;
  auto first = bus::attempt_span_id(trace, "m-1", 0, 1, 1000);
  CHECK(first == bus::attempt_span_id(trace, "m-1", 0, 1, 1000));
  CHECK(first != bus::attempt_span_id(trace, "m-1", 0, 2, 1000)); // immediate retry
  CHECK(first != bus::attempt_span_id(trace, "m-1", 1, 1, 1000)); // redelivery
  CHECK(first != bus::attempt_span_id(trace, "m-1", 0, 1, 2000)); // requeued, run again
  CHECK(first != bus::attempt_span_id(trace, "m-2", 0, 1, 1000));
  CHECK(first != bus::span_id{});
}

TEST_CASE("a child keeps the trace and flags and names the span as its parent") {
  auto parent = *parse_traceparent(valid);
  auto span = bus::attempt_span_id(parent.trace, "m-1", 0, 1, 0);
  auto child = bus::child_of(parent, span);
  CHECK(child.trace == parent.trace);
  CHECK(child.flags == parent.flags);
  CHECK(child.parent == span);
}
