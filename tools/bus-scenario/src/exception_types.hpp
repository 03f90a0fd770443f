// The exception types a scenario may name: the sample hierarchy
// (bus/sample_exceptions.hpp), two of the standard library's, the bus's
// own handler_actor_error, which is what a handler served by an actor fails
// with whatever went wrong, and foreign_error, which derives from nothing.
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bus/handler_actor_error.hpp"
#include "bus/sample_exceptions.hpp"

namespace bus::scenario {

using samples::field_kind;
using samples::field_spec;
using samples::field_value;
using samples::field_values;
using samples::type_tag;

// What code that does not use std::exception throws (a C library's wrapper,
// an older code base): a type that derives from nothing, so that a scenario
// can show what "on": "any" catches and "on": "exception" does not. It has
// no what(): the bus reports it by its type alone.
struct foreign_error {};

struct exception_type_info {
  std::string name;               // as a scenario names it: "http_error"
  std::string base;               // its base class, by the same kind of name; "" for a root
  std::vector<field_spec> fields; // besides "message", which every std::exception has
  bool throwable = true;          // false for bases that are only matched ("exception")
  std::string cpp_name;           // as the bus reports it: "bus::samples::http_error"
  std::string meaning;
  // False for foreign_error: no "message", no fields, no conditions.
  bool std_exception = true;
};

// Every type, bases first.
[[nodiscard]] const std::vector<exception_type_info>& exception_types();
[[nodiscard]] const exception_type_info* find_exception_type(std::string_view name);
// The fields `type` can be asked for in a predicate: "message" and its own;
// none for a type that does not derive from std::exception.
[[nodiscard]] std::optional<field_kind> field_kind_of(const exception_type_info& type,
                                                      std::string_view field);

// A throwable type, built with `message` (empty: its default text) and
// `fields` (checked against the type beforehand).
[[nodiscard]] std::exception_ptr make_exception(const exception_type_info& type,
                                                const std::string& message,
                                                const field_values& fields);

// The field `name` of a caught exception: "message" is what(); the others
// exist on samples only.
[[nodiscard]] std::optional<field_value> field_of(const std::exception& e, std::string_view name);

// The scenario's name for a type the bus reports by its C++ name
// ("bus::samples::http_error" -> "http_error"); other names unchanged.
[[nodiscard]] std::string scenario_name_of(const std::string& cpp_name);

// Calls f(type_tag<E>{}) with the C++ type named `name`; false if there is
// none. How a name in a file becomes on<E>() or unrecoverable<E>().
template <class F>
bool with_exception_type(std::string_view name, F&& f) {
  if (name == "exception")
    return f(type_tag<std::exception>{}), true;
  if (name == "runtime_error")
    return f(type_tag<std::runtime_error>{}), true;
  if (name == "handler_actor_error")
    return f(type_tag<bus::handler_actor_error>{}), true;
  if (name == "foreign_error")
    return f(type_tag<foreign_error>{}), true;
  return samples::with_sample_type(name, std::forward<F>(f));
}

} // namespace bus::scenario
