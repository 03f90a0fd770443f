#include "exception_types.hpp"

#include <algorithm>

#include "bus/policy/exception_type.hpp"

namespace bus::scenario {

namespace {

template <class E>
std::string cpp_name_of() {
  return bus::detail::type_name(typeid(E));
}

std::vector<exception_type_info> make_types() {
  std::vector<exception_type_info> out;
  out.push_back({"exception", "", {}, false, cpp_name_of<std::exception>(),
                 "std::exception: every standard and sample exception"});
  out.push_back({"runtime_error", "exception", {}, true, cpp_name_of<std::runtime_error>(),
                 "std::runtime_error"});
  out.push_back({"handler_actor_error", "runtime_error", {}, true,
                 cpp_name_of<bus::handler_actor_error>(),
                 "how the bus reports any failure of a handler served by an actor"});
  exception_type_info foreign{"foreign_error", "", {}, true, cpp_name_of<foreign_error>(),
                              "derives from nothing, not even std::exception (what a C "
                              "library's wrapper or older code throws); \"on\": \"any\" "
                              "catches it, \"on\": \"exception\" does not"};
  foreign.std_exception = false;
  out.push_back(std::move(foreign));
  for (const auto& sample : samples::sample_types()) {
    exception_type_info info{sample.name, sample.base, sample.fields, sample.concrete, {},
                             sample.meaning};
    with_exception_type(sample.name, [&](auto tag) {
      info.cpp_name = cpp_name_of<typename decltype(tag)::type>();
    });
    out.push_back(std::move(info));
  }
  return out;
}

} // namespace

const std::vector<exception_type_info>& exception_types() {
  static const auto types = make_types();
  return types;
}

const exception_type_info* find_exception_type(std::string_view name) {
  const auto& types = exception_types();
  auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.name == name; });
  return it == types.end() ? nullptr : &*it;
}

std::optional<field_kind> field_kind_of(const exception_type_info& type, std::string_view field) {
  if (!type.std_exception)
    return std::nullopt;
  if (field == "message")
    return field_kind::text;
  for (const auto& f : type.fields)
    if (f.name == field)
      return f.kind;
  return std::nullopt;
}

std::exception_ptr make_exception(const exception_type_info& type, const std::string& message,
                                  const field_values& fields) {
  if (type.name == "runtime_error")
    return std::make_exception_ptr(std::runtime_error(message.empty() ? "failed" : message));
  if (type.name == "handler_actor_error")
    return std::make_exception_ptr(
      bus::handler_actor_error(message.empty() ? "the handler actor failed" : message));
  if (type.name == "foreign_error")
    return std::make_exception_ptr(foreign_error{});
  return samples::make_sample_exception(type.name, message, fields);
}

std::optional<field_value> field_of(const std::exception& e, std::string_view name) {
  if (const auto* sample = dynamic_cast<const samples::sample_error*>(&e))
    return sample->field(name);
  if (name == "message")
    return field_value{std::string(e.what())};
  return std::nullopt;
}

std::string scenario_name_of(const std::string& cpp_name) {
  for (const auto& t : exception_types())
    if (t.cpp_name == cpp_name)
      return t.name;
  return cpp_name;
}

} // namespace bus::scenario
