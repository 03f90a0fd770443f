#include "outbox_stores.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "bus/sqlite_store.hpp"

namespace bus::scenario {

namespace {

// A fresh directory under the system's temporary one, as mkdtemp makes it:
// no other run can share it.
result<std::filesystem::path> make_temporary_directory() {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec)
    return error{errc::store_failure, "no temporary directory: " + ec.message()};
  auto pattern = (base / "bus-scenario-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return error{errc::store_failure,
                 "cannot create a temporary directory in " + base.string() + ": "
                   + std::strerror(errno)};
  return std::filesystem::path(pattern);
}

} // namespace

result<std::unique_ptr<outbox_stores>> outbox_stores::open(const scenario& s) {
  std::unique_ptr<outbox_stores> out(new outbox_stores());
  std::map<std::filesystem::path, std::shared_ptr<message_store>> by_file;
  for (const auto& e : s.endpoints) {
    if (!e.outbox)
      continue;
    std::filesystem::path file;
    if (e.outbox->sqlite_file.empty()) {
      if (out->temporary_.empty()) {
        auto dir = make_temporary_directory();
        if (!dir)
          return error{dir.error().code, "endpoint '" + e.name + "': " + dir.error().message};
        out->temporary_ = *dir;
      }
      file = out->temporary_ / (e.name + ".db");
    } else {
      // One store per file, whichever way the endpoints spell it: a store
      // object is a process's lease on the file's records.
      std::error_code ec;
      file = std::filesystem::absolute(e.outbox->sqlite_file, ec).lexically_normal();
      if (ec)
        file = e.outbox->sqlite_file;
    }
    auto known = by_file.find(file);
    if (known == by_file.end()) {
      auto store = sqlite_store::open({file.string()});
      if (!store)
        return error{store.error().code,
                     "endpoint '" + e.name + "': its outbox's store did not open: "
                       + store.error().message};
      known = by_file.emplace(file, std::move(*store)).first;
    }
    out->by_endpoint_[e.name] = known->second;
  }
  return result<std::unique_ptr<outbox_stores>>(std::move(out));
}

outbox_stores::~outbox_stores() {
  by_endpoint_.clear();
  if (!temporary_.empty()) {
    std::error_code ignored; // a file left in /tmp is not worth failing a run for
    std::filesystem::remove_all(temporary_, ignored);
  }
}

std::shared_ptr<message_store> outbox_stores::of(const std::string& endpoint) const {
  auto it = by_endpoint_.find(endpoint);
  return it == by_endpoint_.end() ? nullptr : it->second;
}

void add_outbox_counts(nlohmann::ordered_json& summary, const scenario& s,
                       const stats_lookup& stats_of) {
  nlohmann::ordered_json counts;
  for (const auto& e : s.endpoints) {
    if (!e.outbox)
      continue;
    auto stats = stats_of(e.name);
    counts[e.name] = {{"duplicates", stats ? stats->duplicates : 0}};
  }
  if (!counts.empty())
    summary["summary"]["outbox"] = std::move(counts);
}

} // namespace bus::scenario
