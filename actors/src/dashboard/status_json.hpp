// The page's live state as JSON (GET /api/status): what the page draws
// every second. Counters are totals; the page turns them into rates from
// one poll to the next, so the bus keeps no history for it.
#pragma once

#include <nlohmann/json.hpp>

#include "view.hpp"

namespace bus::detail::dashboard {

[[nodiscard]] nlohmann::json status_json(const view& v, bool writable);

} // namespace bus::detail::dashboard
