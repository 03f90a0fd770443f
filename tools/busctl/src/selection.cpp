#include "selection.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace bus::ctl {

namespace {

bool in_group(const queued_message& m, const by_group& g) {
  if (g.exception_type && fault_of(m).exception_type != *g.exception_type)
    return false;
  return !g.message_type || message_type_of(m) == *g.message_type;
}

} // namespace

selection select(const std::vector<queued_message>& messages, const selector& s) {
  selection out;
  std::visit(
    [&](const auto& how) {
      using kind = std::decay_t<decltype(how)>;
      if constexpr (std::is_same_v<kind, by_ids>) {
        std::set<std::string> wanted(how.ids.begin(), how.ids.end());
        std::set<std::string> seen;
        for (std::size_t i = 0; i < messages.size(); ++i) {
          if (!messages[i].id.empty() && wanted.count(messages[i].id) > 0) {
            out.chosen.push_back(i);
            seen.insert(messages[i].id);
          }
        }
        std::set<std::string> reported;
        for (const auto& id : how.ids)
          if (seen.count(id) == 0 && reported.insert(id).second)
            out.unknown_ids.push_back(id);
      } else if constexpr (std::is_same_v<kind, by_group>) {
        for (std::size_t i = 0; i < messages.size(); ++i)
          if (in_group(messages[i], how))
            out.chosen.push_back(i);
      } else {
        static_assert(std::is_same_v<kind, every_message>);
        for (std::size_t i = 0; i < messages.size(); ++i)
          out.chosen.push_back(i);
      }
    },
    s);
  return out;
}

const queued_message* find_by_id(const std::vector<queued_message>& messages,
                                 const std::string& id) {
  auto it = std::find_if(messages.begin(), messages.end(),
                         [&](const queued_message& m) { return !id.empty() && m.id == id; });
  return it == messages.end() ? nullptr : &*it;
}

std::vector<message_group> group_messages(const std::vector<queued_message>& messages) {
  std::map<std::pair<std::string, std::string>, message_group> groups;
  for (const auto& m : messages) {
    auto fault = fault_of(m);
    auto type = message_type_of(m);
    auto& g = groups[{fault.exception_type, type}];
    g.exception_type = fault.exception_type;
    g.message_type = type;
    ++g.count;
    g.ids.push_back(m.id);
    // ISO 8601 times in UTC, written by one function: text order is time order.
    if (!fault.at.empty()) {
      if (g.first_failure_at.empty() || fault.at < g.first_failure_at)
        g.first_failure_at = fault.at;
      if (fault.at > g.last_failure_at)
        g.last_failure_at = fault.at;
    }
  }
  std::vector<message_group> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups)
    out.push_back(std::move(g));
  // The map already orders by (exception type, message type): a stable sort
  // by count keeps that order among equals.
  std::stable_sort(out.begin(), out.end(), [](const message_group& a, const message_group& b) {
    return a.count > b.count;
  });
  return out;
}

} // namespace bus::ctl
