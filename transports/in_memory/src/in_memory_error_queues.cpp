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
  auto destination_of = [&](const failed_message& m) {
    return m.original_address.empty() ? fallback : m.original_address;
  };
  std::size_t chosen = 0;
  std::optional<error> problem; // the first refusal or send refused
  // A message that may not go back where it came from is not taken at all:
  // it keeps its place on the error queue.
  auto taken = transport_.take(queue, [&](const envelope& msg) {
    auto m = failed_message_of(msg, queue);
    if (!selected(m))
      return false;
    ++chosen;
    auto refusal = stream_replay_refusal(m.stream_offset, m.original_address, destination_of(m));
    if (refusal.empty())
      return true;
    if (!problem)
      problem = error{errc::invalid_configuration, "message " + m.id + ": " + refusal};
    return false;
  });
  std::size_t replayed = 0;
  for (auto& msg : taken) {
    auto destination = destination_of(failed_message_of(*msg, queue));
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
                                  + std::to_string(chosen) + "; the others are on '" + queue
                                  + "': " + problem->message};
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
