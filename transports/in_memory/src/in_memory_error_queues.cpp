#include "in_memory_error_queues.hpp"

#include <optional>

#include "bus/in_memory_transport.hpp"
#include "bus/replay_headers.hpp"

namespace bus::detail {

namespace {

error no_such_queue(const std::string& queue) {
  return error{errc::unknown_queue, "queue '" + queue + "' was never declared"};
}

} // namespace

result<std::vector<failed_message>> in_memory_error_queues::read(const std::string& queue,
                                                                 std::size_t limit) {
  if (!transport_.has_queue(queue))
    return no_such_queue(queue);
  std::vector<failed_message> out;
  for (const auto& msg : transport_.browse(queue)) {
    if (limit != 0 && out.size() == limit)
      break;
    out.push_back(failed_message_of(*msg, queue));
  }
  return out;
}

result<std::size_t> in_memory_error_queues::replay(const std::string& queue,
                                                   const failed_selector& selected,
                                                   const std::string& fallback, time_point now) {
  if (!transport_.has_queue(queue))
    return no_such_queue(queue);
  auto taken = transport_.take(
    queue, [&](const envelope& msg) { return selected(failed_message_of(msg, queue)); });
  std::size_t replayed = 0;
  std::optional<error> problem; // the first send refused
  for (auto& msg : taken) {
    auto destination = failed_message_of(*msg, queue).original_address;
    if (destination.empty())
      destination = fallback;
    auto sent = transport_.send(destination, replayed_copy(*msg, now, queue));
    if (sent) {
      ++replayed;
      continue;
    }
    if (!problem)
      problem = sent.error();
    // Not sent: it goes back to the error queue (at its tail), never lost.
    (void)transport_.send(queue, *msg);
  }
  if (problem)
    return error{problem->code, "replayed " + std::to_string(replayed) + " of "
                                  + std::to_string(taken.size()) + "; the others are back on '"
                                  + queue + "': " + problem->message};
  return replayed;
}

result<std::size_t> in_memory_error_queues::purge(const std::string& queue,
                                                  const failed_selector& selected) {
  if (!transport_.has_queue(queue))
    return no_such_queue(queue);
  return transport_
    .take(queue, [&](const envelope& msg) { return selected(failed_message_of(msg, queue)); })
    .size();
}

} // namespace bus::detail
