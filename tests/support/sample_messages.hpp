// Message types shared by the tests: small, with the nlohmann functions a
// message needs, and inspectable so that actor-served handlers can take them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bus::test {

struct order_placed {
  std::string order_id;
  double amount = 0;
  friend bool operator==(const order_placed& a, const order_placed& b) {
    return a.order_id == b.order_id && a.amount == b.amount;
  }
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_placed, order_id, amount)

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_placed& x) {
  return f(x.order_id, x.amount);
}

struct invoice_requested {
  std::string order_id;
  std::vector<std::string> lines;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(invoice_requested, order_id, lines)

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, invoice_requested& x) {
  return f(x.order_id, x.lines);
}

// The failure of a handler whose database is down: the exception type the
// resilience tests write rules for.
struct database_down : std::runtime_error {
  database_down() : std::runtime_error("database unavailable") {}
};

} // namespace bus::test
