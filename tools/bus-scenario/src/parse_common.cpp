#include "parse_common.hpp"

#include <limits>

namespace bus::scenario::detail {

const exception_type_info* exception_type_at(const node& n, bool throwable) {
  auto name = n.as_string();
  if (!name)
    return nullptr;
  const auto* type = find_exception_type(*name);
  if (!type) {
    std::vector<std::string> names;
    for (const auto& t : exception_types())
      if (t.throwable || !throwable)
        names.push_back(t.name);
    n.error(unknown_name_text("exception type", *name, names));
    return nullptr;
  }
  if (throwable && !type->throwable) {
    n.error("\"" + *name + "\" is a base type that rules can name but a script cannot throw; "
            "throw one of the types derived from it");
    return nullptr;
  }
  return type;
}

std::optional<field_value> field_value_at(const node& n, field_kind kind) {
  switch (kind) {
    case field_kind::boolean:
      if (auto v = n.as_bool())
        return field_value{*v};
      return std::nullopt;
    case field_kind::integer:
      if (auto v = n.as_integer())
        return field_value{*v};
      return std::nullopt;
    case field_kind::text:
      if (auto v = n.as_string())
        return field_value{*v};
      return std::nullopt;
    case field_kind::duration:
      if (auto v = n.as_duration())
        return field_value{*v};
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<field_values> fields_at(const node& n, const exception_type_info& type) {
  std::vector<std::string_view> known;
  for (const auto& f : type.fields)
    known.push_back(f.name);
  if (known.empty()) {
    if (!n.json().is_object() || !n.json().empty()) {
      n.error(type.name + " has no fields besides its message");
      return std::nullopt;
    }
    return field_values{};
  }
  auto object = n.as_object(known);
  if (!object)
    return std::nullopt;
  field_values out;
  bool ok = true;
  for (const auto& f : type.fields) {
    if (auto value_node = object->get(f.name)) {
      if (auto value = field_value_at(*value_node, f.kind))
        out.emplace(f.name, std::move(*value));
      else
        ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return out;
}

std::optional<int> int_at(const node& n, std::int64_t min) {
  auto v = n.as_integer(min);
  if (!v)
    return std::nullopt;
  if (*v > std::numeric_limits<int>::max() || *v < std::numeric_limits<int>::min()) {
    n.error("is out of range");
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

} // namespace bus::scenario::detail
