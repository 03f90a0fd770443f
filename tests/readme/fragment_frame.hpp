// The frame the README's fragments compile in (tests/readme): the names a
// fragment uses without declaring them, as a reader would have them from
// the surrounding text. Each fragment becomes the body of a function whose
// parameters are the objects a fragment works on (BUS_README_CONTEXT), in
// a namespace of its own that sees this one.
#pragma once

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp> // the testing fragment's CHECK and REQUIRE

#include "bus/bus.hpp"
#include "bus/policy/explain_svg.hpp" // "Seeing a policy before it runs"

struct sqlite3;

namespace prometheus {
class Registry;
} // namespace prometheus

namespace readme_frame {

using namespace std::chrono_literals;

// The README's messages.
struct order_placed {
  std::string order_id;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_placed, order_id, amount)

struct invoice_requested {
  std::string order_id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(invoice_requested, order_id)

struct price_query {
  std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(price_query, sku)

struct price {
  std::string sku;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(price, sku, amount)

struct payment_due {
  std::string invoice_id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(payment_due, invoice_id)

struct reminder {
  std::string order_id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(reminder, order_id)

struct check {
  std::string order_id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(check, order_id)

// The README's exceptions.
struct validation_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct duplicate_message : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct db_error : std::runtime_error {
  using std::runtime_error::runtime_error;
  bool transient = true;
};

// The README's own functions and handles.
void charge(const order_placed& m);
void alert(const std::string& text);
void insert_invoice(sqlite3* db, const order_placed& m);
void add_to_totals(const order_placed& m); // a projection's table
struct tracer_handle {};
void export_span(tracer_handle tracer, const bus::attempt_span& span);
std::string read_secret(); // the page's token, from wherever the service keeps secrets

} // namespace readme_frame

// What a fragment works on: a fragment declaring one of these names itself
// shadows it in its own block.
#define BUS_README_CONTEXT                                                                        \
  [[maybe_unused]] caf::actor_system &sys, [[maybe_unused]] bus::bus_builder &b,                 \
    [[maybe_unused]] bus::endpoint_builder &e, [[maybe_unused]] bus::message_bus &bus,           \
    [[maybe_unused]] bus::handler_context &ctx, [[maybe_unused]] bus::time_point due_time,       \
    [[maybe_unused]] const std::string &order_id,                                                \
    [[maybe_unused]] const bus::custom_policy &my_policy,                                        \
    [[maybe_unused]] std::shared_ptr<prometheus::Registry> registry,                             \
    [[maybe_unused]] readme_frame::tracer_handle tracer
