// The headers of an envelope: a flat, ordered list of name/value strings.
// A handful of entries is the common case, so a vector beats a node-based
// map on every operation the bus performs (lookup, copy, iteration).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bus {

class headers {
public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;

  headers() = default;
  headers(std::initializer_list<value_type> entries);

  // Sets `name` to `value`, replacing an existing entry of that name.
  void set(std::string_view name, std::string value);
  // The value of `name`, or nothing. The view is valid until the next change.
  [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const;
  [[nodiscard]] bool contains(std::string_view name) const { return find(name).has_value(); }
  // Removes `name`; returns whether it was there.
  bool erase(std::string_view name);
  // Removes every header whose name starts with `prefix`; returns how many.
  std::size_t erase_prefix(std::string_view prefix);

  // Room for `n` entries in all, so that entries about to be added
  // allocate once and exactly (a vector left to double keeps spare slots
  // of 64 bytes each for as long as the copy lives).
  void reserve(std::size_t n) { entries_.reserve(n); }

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  const_iterator begin() const noexcept { return entries_.begin(); }
  const_iterator end() const noexcept { return entries_.end(); }

  friend bool operator==(const headers& a, const headers& b) { return a.entries_ == b.entries_; }
  friend bool operator!=(const headers& a, const headers& b) { return !(a == b); }

private:
  std::vector<value_type> entries_;
};

} // namespace bus
