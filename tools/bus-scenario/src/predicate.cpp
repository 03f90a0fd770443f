// Evaluating a scenario's conditions on the fields of an exception.
#include <algorithm>

#include "apply_policy.hpp"

namespace bus::scenario {

bool holds(const predicate& p, const std::exception& e) {
  switch (p.kind) {
    case predicate::op::all:
      return std::all_of(p.operands.begin(), p.operands.end(),
                         [&](const predicate& q) { return holds(q, e); });
    case predicate::op::any:
      return std::any_of(p.operands.begin(), p.operands.end(),
                         [&](const predicate& q) { return holds(q, e); });
    case predicate::op::negate:
      return !holds(p.operands.front(), e);
    default:
      break;
  }
  auto value = field_of(e, p.field);
  if (!value)
    return false;
  switch (p.kind) {
    case predicate::op::equals:
      return *value == p.values.front();
    case predicate::op::not_equals:
      return *value != p.values.front();
    case predicate::op::in:
      return std::find(p.values.begin(), p.values.end(), *value) != p.values.end();
    case predicate::op::contains: {
      const auto* text = std::get_if<std::string>(&*value);
      const auto* part = std::get_if<std::string>(&p.values.front());
      return text && part && text->find(*part) != std::string::npos;
    }
    default:
      return false;
  }
}

} // namespace bus::scenario
