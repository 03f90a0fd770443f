// The median over a case's runs, as the suite's sections report it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

// The median of the value at `pointer` ("/inbox/bytes_per_record") over
// the runs that have a number there and no error, or null.
inline nlohmann::json median_at(const std::vector<nlohmann::json>& runs,
                                const std::string& pointer) {
  std::vector<double> v;
  const nlohmann::json::json_pointer at(pointer);
  for (const auto& r : runs)
    if (!r.contains("error") && r.contains(at) && r[at].is_number())
      v.push_back(r[at].get<double>());
  if (v.empty())
    return nullptr;
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace bench
