// The in-memory transport's error_queue_access (bus/failed_messages.hpp):
// reads a queue's waiting messages, takes the selected ones off it for a
// replay or a purge. Each operation takes its messages in one step under
// the transport's lock, so a consumer never sees a message being replayed.
#pragma once

#include "bus/failed_messages.hpp"

namespace bus {
class in_memory_transport;
} // namespace bus

namespace bus::detail {

class in_memory_error_queues final : public error_queue_access {
public:
  explicit in_memory_error_queues(in_memory_transport& transport) : transport_(transport) {}

  result<std::vector<failed_message>> read(const std::string& queue, std::size_t limit) override;
  result<std::size_t> replay(const std::string& queue, const failed_selector& selected,
                             const std::string& fallback, time_point now) override;
  result<std::size_t> purge(const std::string& queue, const failed_selector& selected) override;

private:
  in_memory_transport& transport_;
};

} // namespace bus::detail
