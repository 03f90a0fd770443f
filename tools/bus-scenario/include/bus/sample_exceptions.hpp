// Sample exceptions for simulating failures: a small hierarchy shaped like
// the exceptions of the seed documents (Npgsql's transient flag, HTTP status
// codes, validation, timeouts, duplicates, expired messages, .NET's
// ArgumentException family), so that rules by type, inheritance and
// predicate can be tried without a database or a web service.
//
//   std::runtime_error
//    `- sample_error                   every field readable by name: field("status")
//        |- database_error            transient (bool)
//        |   `- deadlock_error        transient, true by default
//        |- http_error                status (int), retry_after (duration)
//        |- validation_error          property (text)
//        |- timeout_error             after (duration)
//        |- duplicate_message_error
//        |- message_expired_error
//        `- argument_error            param (text)
//            `- argument_null_error
//
// Every sample also has the text field "message" (what()). The catalog at the
// end lists them by name, with their fields, for programs that build them
// from text (bus-scenario, an operator CLI).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bus/time.hpp"

namespace bus::samples {

enum class field_kind { boolean, integer, text, duration };

[[nodiscard]] std::string_view to_string(field_kind kind) noexcept;

using field_value = std::variant<bool, std::int64_t, std::string, duration>;

// Field values by name; a std::less<> map so lookups take a string_view.
using field_values = std::map<std::string, field_value, std::less<>>;

[[nodiscard]] field_kind kind_of(const field_value& value) noexcept;
// As written in a scenario file: true, 429, "SQL", "10s".
[[nodiscard]] std::string to_string(const field_value& value);

struct field_spec {
  std::string name;
  field_kind kind;
  field_value default_value;
  std::string meaning;
};

// The base of every sample: its fields by name, complete (defaults filled in
// by whoever built it).
class sample_error : public std::runtime_error {
public:
  // The value of field `name`: "message" is what(); empty for a name the
  // type does not have.
  [[nodiscard]] std::optional<field_value> field(std::string_view name) const;
  [[nodiscard]] const field_values& fields() const noexcept { return fields_; }

protected:
  sample_error(const std::string& message, field_values fields);

  // For the typed accessors of subclasses: the field exists by construction.
  template <class T>
  [[nodiscard]] const T& get(std::string_view name) const {
    return std::get<T>(fields_.find(name)->second);
  }

private:
  field_values fields_;
};

class database_error : public sample_error {
public:
  explicit database_error(bool transient, const std::string& message = "database error");
  database_error(const std::string& message, field_values fields);
  [[nodiscard]] bool transient() const { return get<bool>("transient"); }
};

// A deadlock victim: the textbook transient failure.
class deadlock_error : public database_error {
public:
  explicit deadlock_error(const std::string& message = "deadlock detected");
  deadlock_error(const std::string& message, field_values fields);
};

class http_error : public sample_error {
public:
  explicit http_error(int status, duration retry_after = {},
                      const std::string& message = "HTTP request failed");
  http_error(const std::string& message, field_values fields);
  [[nodiscard]] int status() const { return static_cast<int>(get<std::int64_t>("status")); }
  // What the server asked for in Retry-After; zero when it said nothing.
  [[nodiscard]] duration retry_after() const { return get<duration>("retry_after"); }
};

class validation_error : public sample_error {
public:
  explicit validation_error(const std::string& property = {},
                            const std::string& message = "validation failed");
  validation_error(const std::string& message, field_values fields);
  [[nodiscard]] const std::string& property() const { return get<std::string>("property"); }
};

class timeout_error : public sample_error {
public:
  explicit timeout_error(duration after = std::chrono::seconds(30),
                         const std::string& message = "operation timed out");
  timeout_error(const std::string& message, field_values fields);
  [[nodiscard]] duration after() const { return get<duration>("after"); }
};

class duplicate_message_error : public sample_error {
public:
  explicit duplicate_message_error(const std::string& message = "message already processed");
  duplicate_message_error(const std::string& message, field_values fields);
};

class message_expired_error : public sample_error {
public:
  explicit message_expired_error(const std::string& message = "message expired");
  message_expired_error(const std::string& message, field_values fields);
};

class argument_error : public sample_error {
public:
  explicit argument_error(const std::string& param = {},
                          const std::string& message = "invalid argument");
  argument_error(const std::string& message, field_values fields);
  [[nodiscard]] const std::string& param() const { return get<std::string>("param"); }
};

class argument_null_error : public argument_error {
public:
  explicit argument_null_error(const std::string& param = {},
                               const std::string& message = "argument is null");
  argument_null_error(const std::string& message, field_values fields);
};

// -- the catalog --------------------------------------------------------------

// What a program needs to know about each sample to build one from text.
struct sample_type {
  std::string name;                // "http_error", also the C++ class name
  std::string base;                // "sample_error"; "runtime_error" for sample_error itself
  std::vector<field_spec> fields;  // every field, inherited ones included, "message" excluded
  std::string meaning;
  std::string default_message;     // what() when no message is given
  bool concrete = true;            // false for sample_error, which is only a base to match
};

// Every sample type, bases before the types derived from them.
[[nodiscard]] const std::vector<sample_type>& sample_types();
[[nodiscard]] const sample_type* find_sample_type(std::string_view name);

// The sample named `type` with `message` (empty: the type's default text)
// and `fields` (missing ones take their defaults), as an exception_ptr.
// Nothing for an unknown or abstract type, a field the type does not have or
// a value of the wrong kind: check with the catalog first.
[[nodiscard]] std::exception_ptr make_sample_exception(std::string_view type,
                                                       const std::string& message,
                                                       const field_values& fields);

// Calls f(type_tag<E>{}) for the sample class named `name`; false if none.
// For code that needs the static type, such as a policy rule on<E>().
template <class T>
struct type_tag {
  using type = T;
};

template <class F>
bool with_sample_type(std::string_view name, F&& f) {
  if (name == "sample_error") return f(type_tag<sample_error>{}), true;
  if (name == "database_error") return f(type_tag<database_error>{}), true;
  if (name == "deadlock_error") return f(type_tag<deadlock_error>{}), true;
  if (name == "http_error") return f(type_tag<http_error>{}), true;
  if (name == "validation_error") return f(type_tag<validation_error>{}), true;
  if (name == "timeout_error") return f(type_tag<timeout_error>{}), true;
  if (name == "duplicate_message_error") return f(type_tag<duplicate_message_error>{}), true;
  if (name == "message_expired_error") return f(type_tag<message_expired_error>{}), true;
  if (name == "argument_error") return f(type_tag<argument_error>{}), true;
  if (name == "argument_null_error") return f(type_tag<argument_null_error>{}), true;
  return false;
}

} // namespace bus::samples
