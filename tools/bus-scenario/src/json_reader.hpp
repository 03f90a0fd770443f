// Reading a JSON document field by field, with the path of every value
// ("endpoints[1].policy.rules[0].retry.count"), so that each mistake is
// reported where it is. Readers never throw: a bad value is recorded in the
// diagnostics and read as nothing, and reading goes on, so one run reports
// every mistake of a file at once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/time.hpp"

namespace bus::scenario {

// The mistakes found so far, each as "<path>: <what is wrong>".
class diagnostics {
public:
  void error(const std::string& path, const std::string& text);
  [[nodiscard]] bool empty() const noexcept { return errors_.empty(); }
  [[nodiscard]] const std::vector<std::string>& errors() const noexcept { return errors_; }

private:
  std::vector<std::string> errors_;
};

class object_reader;

// One JSON value and the path that leads to it. Borrows the document and the
// diagnostics: both must outlive it.
class node {
public:
  node(const nlohmann::json& value, std::string path, diagnostics& d)
      : value_(&value), path_(std::move(path)), diag_(&d) {}

  [[nodiscard]] const nlohmann::json& json() const noexcept { return *value_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] diagnostics& diag() const noexcept { return *diag_; }

  // Records "<path>: <text>".
  void error(const std::string& text) const { diag_->error(path_, text); }

  [[nodiscard]] std::optional<std::string> as_string() const;
  [[nodiscard]] std::optional<bool> as_bool() const;
  // An integer no less than `min`; the message says "non-negative" for 0
  // and "positive" for 1.
  [[nodiscard]] std::optional<std::int64_t>
  as_integer(std::int64_t min = std::numeric_limits<std::int64_t>::min()) const;
  // "200ms", "10s", "5min", "1h" or "1d": a number and a unit, nothing else.
  [[nodiscard]] std::optional<duration> as_duration() const;
  // The elements, each with its own path ("...[3]").
  [[nodiscard]] std::optional<std::vector<node>> as_array() const;
  // An object whose fields are all among `known`; each other field is
  // reported as unknown (with a suggestion for a likely typo).
  [[nodiscard]] std::optional<object_reader> as_object(std::vector<std::string_view> known) const;

private:
  const nlohmann::json* value_;
  std::string path_;
  diagnostics* diag_;
};

// The fields of a JSON object.
class object_reader {
public:
  explicit object_reader(const node& self) : self_(self) {}

  [[nodiscard]] const node& self() const noexcept { return self_; }
  [[nodiscard]] bool has(std::string_view key) const;
  // The field `key`, or nothing if it is absent.
  [[nodiscard]] std::optional<node> get(std::string_view key) const;
  // The field `key`; if absent, reports "<path>.<key>: required field is missing".
  [[nodiscard]] std::optional<node> require(std::string_view key) const;

private:
  node self_;
};

// "a.b" or "a[3]" from a parent path and a key or index.
[[nodiscard]] std::string join_path(const std::string& parent, std::string_view key);
[[nodiscard]] std::string join_path(const std::string& parent, std::size_t index);

// "unknown <what> \"<name>\"" with the closest candidate if it looks like a
// typo of one, else the list of candidates.
[[nodiscard]] std::string unknown_name_text(std::string_view what, std::string_view name,
                                            const std::vector<std::string>& candidates);

// The duration a string like "200ms" or "5min" stands for; nothing for
// anything else. Units: ms, s, min, h, d.
[[nodiscard]] std::optional<duration> parse_duration(std::string_view text);

} // namespace bus::scenario
