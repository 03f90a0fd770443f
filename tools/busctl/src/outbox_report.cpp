#include "outbox_report.hpp"

#include <algorithm>
#include <chrono>

#include "text_table.hpp"

namespace bus::ctl {

namespace {

using json = nlohmann::json;

duration age_of(const outbox_backlog& b, time_point now) {
  return std::max(duration::zero(), std::chrono::duration_cast<duration>(now - b.oldest));
}

std::string label_of(const outbox_report& r) {
  return r.file ? r.store + " '" + *r.file + "'" : r.store;
}

std::size_t total_messages(const outbox_report& r) {
  std::size_t n = 0;
  for (const auto& b : r.backlog)
    n += b.messages;
  return n;
}

std::size_t total_sends(const outbox_report& r) {
  std::size_t n = 0;
  for (const auto& b : r.backlog)
    n += b.sends;
  return n;
}

} // namespace

std::string age_text(duration age) {
  using namespace std::chrono;
  auto s = duration_cast<seconds>(std::max(duration::zero(), age)).count();
  constexpr long long minute = 60;
  constexpr long long hour = 60 * minute;
  constexpr long long day = 24 * hour;
  auto two = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    return std::to_string(big) + big_unit
           + (small == 0 ? "" : " " + std::to_string(small) + small_unit);
  };
  if (s < minute)
    return std::to_string(s) + "s";
  if (s < hour)
    return two(s / minute, "m", s % minute, "s");
  if (s < day)
    return two(s / hour, "h", s % hour / minute, "m");
  return two(s / day, "d", s % day / hour, "h");
}

std::string outbox_text(const outbox_report& r, time_point now) {
  std::string out = "outbox of " + label_of(r) + ": ";
  if (r.backlog.empty())
    return out + "nothing pending\n";
  out += plural(total_messages(r), "message", "messages") + " pending ("
         + plural(total_sends(r), "stored send", "stored sends") + ") on "
         + plural(r.backlog.size(), "endpoint", "endpoints") + "\n";
  std::vector<table_row> rows;
  for (const auto& b : r.backlog)
    rows.push_back({b.endpoint, std::to_string(b.messages), std::to_string(b.sends),
                    age_text(age_of(b, now)), to_iso8601(b.oldest)});
  return out
         + render_table({"ENDPOINT", "MESSAGES", "SENDS", "OLDEST AGE", "OLDEST RECEIVED AT"},
                        rows);
}

json outbox_json(const outbox_report& r, time_point now) {
  auto endpoints = json::array();
  for (const auto& b : r.backlog)
    endpoints.push_back(json{{"endpoint", b.endpoint},
                             {"messages", b.messages},
                             {"sends", b.sends},
                             {"oldest_received_at", to_iso8601(b.oldest)},
                             {"oldest_age_ms", age_of(b, now).count()}});
  return json{{"store", r.store},
              {"file", r.file ? json(*r.file) : json(nullptr)},
              {"messages", total_messages(r)},
              {"sends", total_sends(r)},
              {"endpoints", std::move(endpoints)}};
}

} // namespace bus::ctl
