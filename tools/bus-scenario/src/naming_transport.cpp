#include "naming_transport.hpp"

#include "bus/header_names.hpp"

namespace bus::scenario {

void message_names::remember(const std::string& message_id, std::string name) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (names_.count(message_id) > 0)
    return;
  if (ids_of_[name]++ == 0)
    order_.push_back(name);
  names_.emplace(message_id, std::move(name));
}

std::vector<std::string> message_names::names() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return order_;
}

std::size_t message_names::ids_of(const std::string& name) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = ids_of_.find(name);
  return it == ids_of_.end() ? 0 : it->second;
}

std::optional<std::string> message_names::find(const std::string& message_id) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = names_.find(message_id);
  if (it == names_.end())
    return std::nullopt;
  return it->second;
}

void message_names::remember_skip_reason(const std::string& message_id, std::string reason) {
  std::lock_guard<std::mutex> guard(mutex_);
  skip_reasons_[message_id] = std::move(reason);
}

std::optional<std::string> message_names::skip_reason(const std::string& message_id) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = skip_reasons_.find(message_id);
  if (it == skip_reasons_.end())
    return std::nullopt;
  return it->second;
}

void naming_transport::learn(envelope& msg) {
  // Redeliveries and error-queue copies keep the id and the header: only
  // the first sight of an id adds anything.
  if (auto name = msg.headers.find(scenario_name_header))
    names_->remember(msg.message_id, std::string(*name));
  if (auto reason = msg.headers.find(header::skipped_reason))
    names_->remember_skip_reason(msg.message_id, std::string(*reason));
  // Only on the first send: the header goes with the swap, and every later
  // copy (error queue, redelivery) keeps the malformed text as it came in.
  if (auto body = msg.headers.find(scenario_body_header)) {
    msg.body = message_body::text(std::string(*body));
    msg.headers.erase(scenario_body_header);
  }
  if (on_fault_)
    if (auto fault = read_fault(msg, *names_))
      on_fault_(*fault);
}

} // namespace bus::scenario
