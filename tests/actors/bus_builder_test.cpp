#include <catch2/catch.hpp>

#include <stdexcept>
#include <variant>

#include "support/caf_fixture.hpp"

using namespace bus::test;

namespace {
struct not_registered {
  int x = 0;
};
} // namespace

TEST_CASE_METHOD(caf_fixture, "a bus with every mistake at once is refused, naming each") {
  bus::bus_builder b{sys};
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("order_placed") // a name taken twice
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(0).handle<not_registered>([](const not_registered&) {});
    })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    })
    .endpoint("shipping", [](bus::endpoint_builder&) {});
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK(built.error().code == bus::errc::invalid_configuration);
  const auto& text = built.error().message;
  CHECK_THAT(text, Catch::Contains("already registered"));
  CHECK_THAT(text, Catch::Contains("no transport"));
  CHECK_THAT(text, Catch::Contains("endpoint 'billing': slots must be at least 1"));
  CHECK_THAT(text, Catch::Contains("not a registered message"));
  CHECK_THAT(text, Catch::Contains("endpoint 'billing' is defined twice"));
  CHECK_THAT(text, Catch::Contains("endpoint 'shipping': it has no handler"));
}

TEST_CASE_METHOD(caf_fixture, "two handlers for one message type on one endpoint are refused") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {}).handle<order_placed>([](const order_placed&) {});
  });
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message, Catch::Contains("more than one handler for message 'order_placed'"));
}

TEST_CASE_METHOD(caf_fixture, "starting a bus declares each endpoint's input, error and skipped queues") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  b.endpoint("shipping", [](bus::endpoint_builder& e) {
    e.error_queue("shipping_faults").handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  for (const auto* q : {"billing", "billing_error", "billing_skipped", "shipping",
                        "shipping_faults", "shipping_skipped"})
    CHECK(transport->has_queue(q));
  CHECK(bus->endpoint_names() == std::vector<std::string>{"billing", "shipping"});
  CHECK(bus->running());
  CHECK_FALSE(bus->stats("nowhere").has_value());
}

TEST_CASE_METHOD(caf_fixture, "sending a message type the bus does not know is an error") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  auto sent = bus->send("billing", not_registered{});
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == bus::errc::unknown_message_type);
  auto nowhere = bus->send("nowhere", order_placed{"o-1", 1});
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error().code == bus::errc::unknown_queue);
}

TEST_CASE_METHOD(caf_fixture, "explain shows what an endpoint's handler does with an exception, "
                              "its scopes resolved, and names what there is when asked wrong") {
  auto b = builder();
  b.add_resilience([](bus::policy_builder& p) { p.on_any().retry(2); });
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {})
      .handle<invoice_requested>([](const invoice_requested&) {})
      .resilience_for<invoice_requested>(
        [](bus::policy_builder& p) { p.on<std::invalid_argument>().discard(); });
  });
  b.endpoint("shipping", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  auto failure = std::make_exception_ptr(std::invalid_argument("no such order"));

  // The bus scope: two retries, then the error queue.
  auto plain = bus.explain("billing", "order_placed", failure);
  REQUIRE(plain);
  CHECK(plain->scope == bus::scope_level::bus);
  CHECK(plain->plan.size() == 3);
  // The handler's own scope replaces it.
  auto own = bus.explain("billing", "invoice_requested", failure);
  REQUIRE(own);
  CHECK(own->scope == bus::scope_level::consumer);
  REQUIRE(own->plan.size() == 1);
  CHECK(std::holds_alternative<bus::discard>(own->plan.front().then));
  // One handler: the message type may be left out.
  auto only = bus.explain("shipping", "", failure);
  REQUIRE(only);
  CHECK(only->plan.size() == 3);

  auto no_endpoint = bus.explain("nowhere", "order_placed", failure);
  REQUIRE_FALSE(no_endpoint);
  CHECK(no_endpoint.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(no_endpoint.error().message, Catch::Contains("billing, shipping"));
  auto no_handler = bus.explain("shipping", "invoice_requested", failure);
  REQUIRE_FALSE(no_handler);
  CHECK_THAT(no_handler.error().message, Catch::Contains("it handles: order_placed"));
  auto which = bus.explain("billing", "", failure);
  REQUIRE_FALSE(which);
  CHECK_THAT(which.error().message,
             Catch::Contains("several handlers") && Catch::Contains("order_placed, invoice_requested"));
}
