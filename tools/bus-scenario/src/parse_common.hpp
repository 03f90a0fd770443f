// Helpers shared by the parts of the scenario parser.
#pragma once

#include <optional>
#include <string>

#include "exception_types.hpp"
#include "json_reader.hpp"

namespace bus::scenario::detail {

// The exception type a string names; an unknown name, or one that cannot be
// thrown when `throwable` is asked for, is reported.
[[nodiscard]] const exception_type_info* exception_type_at(const node& n, bool throwable);

// A value of kind `kind` as JSON writes it: true, 429, "SQL", "10s".
[[nodiscard]] std::optional<field_value> field_value_at(const node& n, field_kind kind);

// {"status": 503, "retry_after": "30s"}: fields of `type`, each of its kind.
[[nodiscard]] std::optional<field_values> fields_at(const node& n,
                                                    const exception_type_info& type);

// A count that must fit an int (retries, redeliveries, attempts).
[[nodiscard]] std::optional<int> int_at(const node& n, std::int64_t min);

} // namespace bus::scenario::detail
