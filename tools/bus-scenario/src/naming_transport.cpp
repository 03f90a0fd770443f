#include "naming_transport.hpp"

namespace bus::scenario {

void message_names::remember(const std::string& message_id, std::string name) {
  std::lock_guard<std::mutex> guard(mutex_);
  names_.emplace(message_id, std::move(name));
}

std::optional<std::string> message_names::find(const std::string& message_id) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = names_.find(message_id);
  if (it == names_.end())
    return std::nullopt;
  return it->second;
}

void naming_transport::learn(const envelope& msg) {
  // Redeliveries and error-queue copies keep the id and the header: only
  // the first sight of an id adds anything.
  if (auto name = msg.headers.find(scenario_name_header))
    names_->remember(msg.message_id, std::string(*name));
}

} // namespace bus::scenario
