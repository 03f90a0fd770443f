#include "bus/sample_exceptions.hpp"

#include "bus/policy/schedule.hpp"

#include <algorithm>
#include <type_traits>

namespace bus::samples {

namespace {

using namespace std::chrono_literals;

const std::vector<sample_type>& catalog() {
  static const std::vector<sample_type> types = [] {
    field_spec transient{"transient", field_kind::boolean, false,
                         "whether trying again may succeed (Npgsql's IsTransient)"};
    field_spec param{"param", field_kind::text, std::string(),
                     "the name of the offending argument (.NET's ParamName)"};
    std::vector<sample_type> t;
    t.push_back({"sample_error", "runtime_error", {}, "the base of every sample", "", false});
    t.push_back({"database_error", "sample_error", {transient}, "a database call failed",
                 "database error"});
    auto deadlock_transient = transient;
    deadlock_transient.default_value = true;
    t.push_back({"deadlock_error", "database_error", {deadlock_transient},
                 "chosen as a deadlock victim; transient unless said otherwise",
                 "deadlock detected"});
    t.push_back({"http_error",
                 "sample_error",
                 {{"status", field_kind::integer, std::int64_t{500}, "the HTTP status code"},
                  {"retry_after", field_kind::duration, duration{0},
                   "the server's Retry-After; 0ms when it gave none"}},
                 "an HTTP call answered with an error status", "HTTP request failed"});
    t.push_back({"validation_error",
                 "sample_error",
                 {{"property", field_kind::text, std::string(), "the invalid property"}},
                 "the message is invalid; retrying cannot help", "validation failed"});
    t.push_back({"timeout_error",
                 "sample_error",
                 {{"after", field_kind::duration, duration{30s}, "how long the call waited"}},
                 "a call did not answer in time", "operation timed out"});
    t.push_back({"duplicate_message_error", "sample_error", {},
                 "the message was processed before; safe to drop", "message already processed"});
    t.push_back({"message_expired_error", "sample_error", {},
                 "the message is too old to matter any more", "message expired"});
    t.push_back({"argument_error", "sample_error", {param}, "an argument is invalid",
                 "invalid argument"});
    t.push_back({"argument_null_error", "argument_error", {param},
                 "an argument is missing (a subclass of argument_error)", "argument is null"});
    return t;
  }();
  return types;
}

// `fields` with the defaults of `type` added for the fields it lacks.
field_values complete(std::string_view type, field_values fields) {
  if (const auto* t = find_sample_type(type))
    for (const auto& f : t->fields)
      fields.emplace(f.name, f.default_value);
  return fields;
}

template <class E>
std::exception_ptr make_as(const std::string& message, const field_values& fields) {
  return std::make_exception_ptr(E(message, fields));
}

} // namespace

std::string_view to_string(field_kind kind) noexcept {
  switch (kind) {
    case field_kind::boolean: return "boolean";
    case field_kind::integer: return "integer";
    case field_kind::text: return "text";
    case field_kind::duration: return "duration";
  }
  return "unknown";
}

field_kind kind_of(const field_value& value) noexcept {
  return static_cast<field_kind>(value.index());
}

std::string to_string(const field_value& value) {
  return std::visit(
    [](const auto& v) -> std::string {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, bool>)
        return v ? "true" : "false";
      else if constexpr (std::is_same_v<T, std::int64_t>)
        return std::to_string(v);
      else if constexpr (std::is_same_v<T, std::string>)
        return '"' + v + '"';
      else
        return '"' + to_short_string(v) + '"';
    },
    value);
}

sample_error::sample_error(const std::string& message, field_values fields)
    : std::runtime_error(message), fields_(std::move(fields)) {}

std::optional<field_value> sample_error::field(std::string_view name) const {
  if (name == "message")
    return field_value{std::string(what())};
  if (auto it = fields_.find(name); it != fields_.end())
    return it->second;
  return std::nullopt;
}

database_error::database_error(bool transient, const std::string& message)
    : database_error(message, {{"transient", transient}}) {}
database_error::database_error(const std::string& message, field_values fields)
    : sample_error(message, complete("database_error", std::move(fields))) {}

deadlock_error::deadlock_error(const std::string& message) : deadlock_error(message, {}) {}
deadlock_error::deadlock_error(const std::string& message, field_values fields)
    : database_error(message, complete("deadlock_error", std::move(fields))) {}

http_error::http_error(int status, duration retry_after, const std::string& message)
    : http_error(message, {{"status", std::int64_t{status}}, {"retry_after", retry_after}}) {}
http_error::http_error(const std::string& message, field_values fields)
    : sample_error(message, complete("http_error", std::move(fields))) {}

validation_error::validation_error(const std::string& property, const std::string& message)
    : validation_error(message, {{"property", property}}) {}
validation_error::validation_error(const std::string& message, field_values fields)
    : sample_error(message, complete("validation_error", std::move(fields))) {}

timeout_error::timeout_error(duration after, const std::string& message)
    : timeout_error(message, {{"after", after}}) {}
timeout_error::timeout_error(const std::string& message, field_values fields)
    : sample_error(message, complete("timeout_error", std::move(fields))) {}

duplicate_message_error::duplicate_message_error(const std::string& message)
    : duplicate_message_error(message, {}) {}
duplicate_message_error::duplicate_message_error(const std::string& message, field_values fields)
    : sample_error(message, complete("duplicate_message_error", std::move(fields))) {}

message_expired_error::message_expired_error(const std::string& message)
    : message_expired_error(message, {}) {}
message_expired_error::message_expired_error(const std::string& message, field_values fields)
    : sample_error(message, complete("message_expired_error", std::move(fields))) {}

argument_error::argument_error(const std::string& param, const std::string& message)
    : argument_error(message, {{"param", param}}) {}
argument_error::argument_error(const std::string& message, field_values fields)
    : sample_error(message, complete("argument_error", std::move(fields))) {}

argument_null_error::argument_null_error(const std::string& param, const std::string& message)
    : argument_null_error(message, {{"param", param}}) {}
argument_null_error::argument_null_error(const std::string& message, field_values fields)
    : argument_error(message, complete("argument_null_error", std::move(fields))) {}

const std::vector<sample_type>& sample_types() { return catalog(); }

const sample_type* find_sample_type(std::string_view name) {
  for (const auto& t : catalog())
    if (t.name == name)
      return &t;
  return nullptr;
}

std::exception_ptr make_sample_exception(std::string_view type, const std::string& message,
                                         const field_values& fields) {
  const auto* t = find_sample_type(type);
  if (!t || !t->concrete)
    return nullptr;
  for (const auto& [name, value] : fields) {
    auto spec = std::find_if(t->fields.begin(), t->fields.end(),
                             [&](const field_spec& f) { return f.name == name; });
    if (spec == t->fields.end() || spec->kind != kind_of(value))
      return nullptr;
  }
  // Each type's constructor fills the missing fields with their defaults.
  const auto& text = message.empty() ? t->default_message : message;
  std::exception_ptr out;
  with_sample_type(type, [&](auto tag) {
    using E = typename decltype(tag)::type;
    if constexpr (std::is_constructible_v<E, const std::string&, field_values>)
      out = make_as<E>(text, fields);
  });
  return out;
}

} // namespace bus::samples
