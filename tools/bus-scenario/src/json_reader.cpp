#include "json_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace bus::scenario {

namespace {

// Levenshtein distance, to suggest the field a typo meant.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      auto above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate `name` is most likely a typo of, or nothing.
std::string_view closest(std::string_view name, const std::vector<std::string_view>& candidates) {
  // Two edits at most, fewer for short names: "to" is no typo of "at".
  const std::size_t limit = std::min<std::size_t>(2, name.size() / 3 + 1);
  std::string_view best;
  std::size_t best_distance = limit + 1;
  for (auto c : candidates) {
    auto d = distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string suggestion(std::string_view name, const std::vector<std::string_view>& candidates) {
  if (auto best = closest(name, candidates); !best.empty())
    return "did you mean \"" + std::string(best) + "\"?";
  std::string list;
  for (auto c : candidates)
    list += (list.empty() ? "" : ", ") + std::string(c);
  return "expected one of: " + list;
}

} // namespace

void diagnostics::error(const std::string& path, const std::string& text) {
  errors_.push_back((path.empty() ? std::string("(top level)") : path) + ": " + text);
}

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string join_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string unknown_name_text(std::string_view what, std::string_view name,
                              const std::vector<std::string>& candidates) {
  std::vector<std::string_view> views(candidates.begin(), candidates.end());
  return "unknown " + std::string(what) + " \"" + std::string(name) + "\" ("
         + suggestion(name, views) + ")";
}

std::optional<duration> parse_duration(std::string_view text) {
  auto digits = std::find_if(text.begin(), text.end(),
                             [](char c) { return !std::isdigit(static_cast<unsigned char>(c)); })
                - text.begin();
  if (digits == 0 || digits > 12)
    return std::nullopt;
  std::int64_t n = 0;
  std::from_chars(text.data(), text.data() + digits, n);
  auto unit = text.substr(static_cast<std::size_t>(digits));
  using namespace std::chrono;
  if (unit == "ms")
    return duration(n);
  if (unit == "s")
    return duration_cast<bus::duration>(seconds(n));
  if (unit == "min")
    return duration_cast<bus::duration>(minutes(n));
  if (unit == "h")
    return duration_cast<bus::duration>(hours(n));
  if (unit == "d")
    return duration_cast<bus::duration>(hours(24 * n));
  return std::nullopt;
}

std::optional<std::string> node::as_string() const {
  if (!value_->is_string()) {
    error("expected a string");
    return std::nullopt;
  }
  return value_->get<std::string>();
}

std::optional<bool> node::as_bool() const {
  if (!value_->is_boolean()) {
    error("expected true or false");
    return std::nullopt;
  }
  return value_->get<bool>();
}

std::optional<std::int64_t> node::as_integer(std::int64_t min) const {
  auto expected = min == 0   ? "expected a non-negative integer"
                  : min == 1 ? "expected a positive integer"
                             : "expected an integer";
  // Unsigned values beyond int64 are refused too: no count needs them.
  if (!value_->is_number_integer()
      || (value_->is_number_unsigned()
          && value_->get<std::uint64_t>()
               > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
    error(expected);
    return std::nullopt;
  }
  auto v = value_->get<std::int64_t>();
  if (v < min) {
    error(expected);
    return std::nullopt;
  }
  return v;
}

std::optional<duration> node::as_duration() const {
  auto text = value_->is_string() ? parse_duration(value_->get_ref<const std::string&>())
                                  : std::nullopt;
  if (!text)
    error("expected a duration such as \"200ms\", \"10s\", \"5min\" or \"1h\"");
  return text;
}

std::optional<std::vector<node>> node::as_array() const {
  if (!value_->is_array()) {
    error("expected an array");
    return std::nullopt;
  }
  std::vector<node> out;
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], join_path(path_, i), *diag_);
  return out;
}

std::optional<object_reader> node::as_object(std::vector<std::string_view> known) const {
  if (!value_->is_object()) {
    error("expected an object");
    return std::nullopt;
  }
  for (const auto& [key, value] : value_->items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      diag_->error(join_path(path_, key), "unknown field (" + suggestion(key, known) + ")");
  return object_reader(*this);
}

bool object_reader::has(std::string_view key) const {
  return self_.json().contains(std::string(key));
}

std::optional<node> object_reader::get(std::string_view key) const {
  auto it = self_.json().find(std::string(key));
  if (it == self_.json().end())
    return std::nullopt;
  return node(*it, join_path(self_.path(), key), self_.diag());
}

std::optional<node> object_reader::require(std::string_view key) const {
  auto field = get(key);
  if (!field)
    self_.diag().error(join_path(self_.path(), key), "required field is missing");
  return field;
}

} // namespace bus::scenario
