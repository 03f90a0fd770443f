#include "event_log.hpp"

#include <algorithm>

namespace bus::scenario {

namespace {

// Every kind of event, in the order the summary lists them.
constexpr event_kind all_kinds[] = {
  event_kind::received,           event_kind::handled,
  event_kind::failed,             event_kind::immediate_retry,
  event_kind::redelivery_scheduled, event_kind::dead_lettered,
  event_kind::discarded,          event_kind::skipped,
  event_kind::requeued,           event_kind::rate_limit_started,
  event_kind::rate_limit_ended,
};

// The dependency breakers' events: listed in the summary, after the others,
// only when a scenario raises any (so summaries without breakers stay as
// they were).
constexpr event_kind dependency_kinds[] = {
  event_kind::dependency_opened, event_kind::dependency_half_open,
  event_kind::dependency_closed, event_kind::endpoint_paused,
  event_kind::endpoint_resumed,  event_kind::held_back,
};

bool is_dependency_kind(event_kind kind) {
  return std::find(std::begin(dependency_kinds), std::end(dependency_kinds), kind)
         != std::end(dependency_kinds);
}

// Kinds the summary lists only when they happened, so that the expected
// summaries of scenarios without them stay as they were (issue 14 on).
constexpr event_kind optional_kinds[] = {
  event_kind::retry_denied, event_kind::expired,
};

// The events that end a message: it is not delivered again.
bool ends_message(event_kind kind) {
  return kind == event_kind::handled || kind == event_kind::dead_lettered
         || kind == event_kind::discarded || kind == event_kind::skipped;
}

bool has_delay(event_kind kind) {
  return kind == event_kind::immediate_retry || kind == event_kind::redelivery_scheduled;
}

// Where the bus's detail text says why (not merely the exception's message,
// which "failed" carries and the script wrote).
bool has_reason(event_kind kind) {
  return kind == event_kind::dead_lettered || kind == event_kind::discarded
         || kind == event_kind::skipped || kind == event_kind::rate_limit_started
         || kind == event_kind::rate_limit_ended || is_dependency_kind(kind)
         || kind == event_kind::retry_denied || kind == event_kind::expired;
}

} // namespace

event_log::event_log(std::ostream& out, std::shared_ptr<const message_names> names,
                     std::function<duration()> clock, const std::vector<send_spec>& sends)
    : out_(&out), names_(std::move(names)), clock_(std::move(clock)) {
  for (const auto& m : sends) {
    messages_.push_back(m.name);
    copies_[m.name] = m.copies;
  }
}

std::vector<std::string> event_log::all_messages() const {
  auto out = messages_;
  for (auto& name : names_->names())
    if (copies_.count(name) == 0)
      out.push_back(std::move(name));
  return out;
}

bool event_log::ended(const std::string& name) const {
  auto own = copies_.find(name);
  auto deliveries = own != copies_.end() ? static_cast<std::size_t>(own->second)
                                         : names_->ids_of(name);
  auto seen = endings_.find(name);
  return seen != endings_.end() && seen->second >= deliveries;
}

bool event_log::all_ended() const {
  auto all = all_messages();
  return std::all_of(all.begin(), all.end(), [&](const std::string& name) { return ended(name); });
}

nlohmann::ordered_json event_log::line_of(const bus_event& e) const {
  nlohmann::ordered_json j;
  j["time_ms"] = clock_().count();
  j["endpoint"] = e.endpoint;
  bool about_a_message = !e.message_id.empty();
  if (about_a_message)
    j["message"] = names_->find(e.message_id).value_or(e.message_id);
  j["event"] = std::string(to_string(e.kind));
  if (about_a_message)
    j["delivery"] = e.delivery_count;
  if (e.attempt > 0)
    j["attempt"] = e.attempt;
  if (has_delay(e.kind))
    j["delay_ms"] = e.delay.count();
  if (!e.exception_type.empty())
    j["exception"] = scenario_name_of(e.exception_type);
  if (has_reason(e.kind)) {
    // The bus's skipped event carries no detail; the header of the copy on
    // the skipped queue says why.
    auto reason = e.detail.empty() && e.kind == event_kind::skipped
                    ? names_->skip_reason(e.message_id).value_or("")
                    : e.detail;
    if (!reason.empty())
      j["reason"] = std::move(reason);
  }
  return j;
}

void event_log::record(const bus_event& e) noexcept {
  try {
    auto json = line_of(e);
    auto line = json.dump();
    std::lock_guard<std::mutex> guard(mutex_);
    if (closed_)
      return;
    *out_ << line << '\n';
    lines_.push_back(std::move(json));
    ++counts_[e.kind];
    if (ends_message(e.kind))
      if (auto name = names_->find(e.message_id)) {
        outcomes_[*name] = std::string(to_string(e.kind));
        ++endings_[*name];
      }
    changed_.notify_all();
  } catch (...) {
    // An observer must not throw into the bus; a line lost to a full disk
    // is not worth a crash.
  }
}

std::vector<nlohmann::ordered_json> event_log::lines() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return lines_;
}

nlohmann::ordered_json event_log::line_of(const raised_fault& f) const {
  nlohmann::ordered_json j;
  j["time_ms"] = clock_().count();
  j["endpoint"] = f.endpoint;
  j["message"] = f.message;
  j["event"] = "fault_raised";
  j["delivery"] = f.delivery_count;
  j["fault"] = f.fault_type;
  j["exception"] = f.exception_type;
  j["reason"] = f.reason;
  return j;
}

void event_log::record_fault(const raised_fault& f) noexcept {
  try {
    auto line = line_of(f).dump();
    std::lock_guard<std::mutex> guard(mutex_);
    if (closed_)
      return;
    *out_ << line << '\n';
    faults_.push_back(f);
  } catch (...) {
    // As record(): never into the bus.
  }
}

std::vector<raised_fault> event_log::faults() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return faults_;
}

void event_log::close() {
  std::lock_guard<std::mutex> guard(mutex_);
  closed_ = true;
}

bool event_log::finished() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return all_ended();
}

bool event_log::wait_until_finished(std::chrono::steady_clock::duration timeout) {
  // A message a handler sends is learnt when it goes out, before the
  // handler's message ends: an ending event is the moment to look again.
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return all_ended(); });
}

nlohmann::ordered_json event_log::summary(const script_book& book) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto all = all_messages();
  // A message's outcome is its last delivery's ending, once all ended.
  auto outcome_of = [&](const std::string& name) {
    return ended(name) ? outcomes_.at(name) : std::string("unfinished");
  };
  nlohmann::ordered_json outcomes;
  for (auto kind : {"handled", "dead_lettered", "discarded", "skipped", "unfinished"})
    outcomes[kind] = std::count_if(all.begin(), all.end(), [&](const std::string& name) {
      return outcome_of(name) == kind;
    });
  nlohmann::ordered_json events;
  for (auto kind : all_kinds) {
    auto it = counts_.find(kind);
    events[std::string(to_string(kind))] = it == counts_.end() ? 0 : it->second;
  }
  if (std::any_of(std::begin(dependency_kinds), std::end(dependency_kinds),
                  [&](event_kind kind) { return counts_.count(kind) > 0; }))
    for (auto kind : dependency_kinds) {
      auto it = counts_.find(kind);
      events[std::string(to_string(kind))] = it == counts_.end() ? 0 : it->second;
    }
  for (auto kind : optional_kinds)
    if (auto it = counts_.find(kind); it != counts_.end() && it->second > 0)
      events[std::string(to_string(kind))] = it->second;
  nlohmann::ordered_json by_message;
  for (const auto& name : all)
    by_message[name] = {{"outcome", outcome_of(name)}, {"attempts", book.attempts(name)}};
  nlohmann::ordered_json s;
  s["messages"] = all.size();
  s["outcomes"] = std::move(outcomes);
  s["events"] = std::move(events);
  s["attempts"] = book.total_attempts();
  s["deaths"] = book.deaths();
  s["by_message"] = std::move(by_message);
  nlohmann::ordered_json out;
  out["summary"] = std::move(s);
  return out;
}

} // namespace bus::scenario
