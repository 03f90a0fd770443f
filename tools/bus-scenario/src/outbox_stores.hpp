// The stores of a scenario's endpoints with an outbox ("outbox"), open for
// one run, and what the summary says of them. A throwaway file ("sqlite")
// lives in a temporary directory of the run's own, removed with this
// object; a file the scenario names ({"sqlite": "<file>"}) is kept.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/endpoint_counters.hpp"
#include "bus/error.hpp"
#include "bus/message_store.hpp"
#include "scenario.hpp"

namespace bus::scenario {

class outbox_stores {
public:
  // Opens the store of every endpoint of `s` with an outbox: one per file,
  // shared by the endpoints that name it, a throwaway file each for the
  // others. errc::store_failure naming the endpoint, the file and why.
  [[nodiscard]] static result<std::unique_ptr<outbox_stores>> open(const scenario& s);

  // Removes the temporary directory, if there is one. The bus, which holds
  // the stores too, must be gone first.
  ~outbox_stores();
  outbox_stores(const outbox_stores&) = delete;
  outbox_stores& operator=(const outbox_stores&) = delete;

  // The store of `endpoint`, or null if it has no outbox.
  [[nodiscard]] std::shared_ptr<message_store> of(const std::string& endpoint) const;
  [[nodiscard]] bool empty() const noexcept { return by_endpoint_.empty(); }

private:
  outbox_stores() = default;

  std::filesystem::path temporary_; // empty until a throwaway file needs it
  std::map<std::string, std::shared_ptr<message_store>> by_endpoint_;
};

// An endpoint's counters by its name, or nothing for no such endpoint
// (message_bus::stats).
using stats_lookup = std::function<std::optional<endpoint_stats>(const std::string&)>;

// Adds "outbox": {"<endpoint>": {"duplicates": n}} to `summary` (the
// {"summary": {...}} object) for each endpoint of `s` with an outbox, its
// counters read through `stats_of`; nothing when `s` has none, so the
// summaries of other scenarios stay as they were.
void add_outbox_counts(nlohmann::ordered_json& summary, const scenario& s,
                       const stats_lookup& stats_of);

} // namespace bus::scenario
