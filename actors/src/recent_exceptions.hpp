// The last exception of each type that an endpoint's handlers threw, kept
// so that the bus's page can explain the policy for exactly what happened
// (GET /policy/<endpoint>): explain() needs the exception itself, because
// rules match on its dynamic type. Bounded: the `capacity` most recently
// seen types, each with the message type it was thrown for; a type seen
// again replaces its entry. Written by consumers on the failure path (one
// short lock), read by the page; any thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bus::detail {

class recent_exceptions {
public:
  static constexpr std::size_t capacity = 16;

  struct entry {
    std::string exception_type;
    std::string message_type;
    std::exception_ptr exception;
  };

  void remember(const std::string& exception_type, const std::string& message_type,
                std::exception_ptr exception) {
    std::lock_guard<std::mutex> guard(mutex_);
    // A type seen again (the common case in an outage) moves to the back
    // with its new exception: no string is copied on the failure path.
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->exception_type == exception_type && it->message_type == message_type) {
        it->exception = std::move(exception);
        std::rotate(it, it + 1, entries_.end());
        return;
      }
    if (entries_.size() == capacity)
      entries_.erase(entries_.begin());
    entries_.push_back({exception_type, message_type, std::move(exception)});
  }

  // Oldest first.
  [[nodiscard]] std::vector<entry> all() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return entries_;
  }

  // The latest of `exception_type` (for `message_type`, unless empty).
  [[nodiscard]] std::optional<entry> find(const std::string& exception_type,
                                          const std::string& message_type) const {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
      if (it->exception_type == exception_type
          && (message_type.empty() || it->message_type == message_type))
        return *it;
    return std::nullopt;
  }

private:
  mutable std::mutex mutex_;
  std::vector<entry> entries_; // guarded by mutex_
};

} // namespace bus::detail
