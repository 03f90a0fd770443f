#include "bus/policy/action.hpp"

#include <ostream>

namespace bus {

bool operator==(const immediate_retry& a, const immediate_retry& b) noexcept {
  return a.delay == b.delay && a.clamped_from == b.clamped_from;
}
bool operator==(const delayed_retry& a, const delayed_retry& b) noexcept {
  return a.delay == b.delay && a.clamped_from == b.clamped_from;
}
bool operator==(const move_to_error& a, const move_to_error& b) noexcept {
  return a.reason == b.reason && a.queue == b.queue;
}
bool operator==(const discard& a, const discard& b) noexcept {
  return a.reason == b.reason;
}
bool operator!=(const immediate_retry& a, const immediate_retry& b) noexcept {
  return !(a == b);
}
bool operator!=(const delayed_retry& a, const delayed_retry& b) noexcept {
  return !(a == b);
}
bool operator!=(const move_to_error& a, const move_to_error& b) noexcept {
  return !(a == b);
}
bool operator!=(const discard& a, const discard& b) noexcept {
  return !(a == b);
}

std::string_view name(const action& a) noexcept {
  struct name_of {
    std::string_view operator()(const immediate_retry&) const noexcept { return "immediate_retry"; }
    std::string_view operator()(const delayed_retry&) const noexcept { return "delayed_retry"; }
    std::string_view operator()(const move_to_error&) const noexcept { return "move_to_error"; }
    std::string_view operator()(const discard&) const noexcept { return "discard"; }
  };
  return std::visit(name_of{}, a);
}

std::string describe(const action& a) {
  struct describe_of {
    static std::string clamped(const std::optional<duration>& from) {
      return from ? " (clamped from " + to_hms(*from) + ")" : std::string();
    }
    std::string operator()(const immediate_retry& r) const {
      return "immediate retry after " + to_hms(r.delay) + clamped(r.clamped_from);
    }
    std::string operator()(const delayed_retry& r) const {
      return "delayed retry after " + to_hms(r.delay) + clamped(r.clamped_from);
    }
    std::string operator()(const move_to_error& m) const {
      const std::string where =
          m.queue.empty() ? "move to the error queue" : "move to error queue '" + m.queue + "'";
      return m.reason.empty() ? where : where + ": " + m.reason;
    }
    std::string operator()(const discard& d) const {
      return d.reason.empty() ? "discard" : "discard: " + d.reason;
    }
  };
  return std::visit(describe_of{}, a);
}

std::ostream& operator<<(std::ostream& out, const immediate_retry& a) {
  return out << describe(action{a});
}
std::ostream& operator<<(std::ostream& out, const delayed_retry& a) {
  return out << describe(action{a});
}
std::ostream& operator<<(std::ostream& out, const move_to_error& a) {
  return out << describe(action{a});
}
std::ostream& operator<<(std::ostream& out, const discard& a) {
  return out << describe(action{a});
}
std::ostream& operator<<(std::ostream& out, const action& a) {
  return out << describe(a);
}

} // namespace bus
