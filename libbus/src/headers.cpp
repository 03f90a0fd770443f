#include "bus/headers.hpp"

#include <algorithm>

namespace bus {

headers::headers(std::initializer_list<value_type> entries) {
  for (const auto& [name, value] : entries)
    set(name, value);
}

void headers::set(std::string_view name, std::string value) {
  for (auto& entry : entries_) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::string(name), std::move(value));
}

std::optional<std::string_view> headers::find(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.first == name)
      return std::string_view(entry.second);
  return std::nullopt;
}

bool headers::erase(std::string_view name) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const value_type& e) { return e.first == name; });
  if (it == entries_.end())
    return false;
  entries_.erase(it);
  return true;
}

std::size_t headers::erase_prefix(std::string_view prefix) {
  auto before = entries_.size();
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const value_type& e) {
                                  return std::string_view(e.first).substr(0, prefix.size())
                                         == prefix;
                                }),
                 entries_.end());
  return before - entries_.size();
}

} // namespace bus
