// The messages of the sample order topology.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace samples {

// A command: asks the order service to place an order.
struct place_order {
  std::string order_id;
  std::string customer;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(place_order, order_id, customer, amount)

// An event: an order was placed. Billing and shipping both react to it.
struct order_placed {
  std::string order_id;
  std::string customer;
  double amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_placed, order_id, customer, amount)

} // namespace samples
