// Failed messages as an operator sees them, whatever the transport: a
// message on an error queue with the fault facts the bus wrote on it, the
// groups they fall into (endpoint and exception type), and the seam through
// which the bus's page reads, replays and deletes them
// (error_queue_access, offered by a transport that can).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/time.hpp"

namespace bus {

struct failed_message {
  std::string queue; // the error queue it sits on
  std::string id;
  std::string message_type;
  // The fault facts (bus-fault-*), empty where the bus wrote none.
  std::string endpoint;
  std::string exception_type;
  std::string exception_message;
  std::string reason;
  std::string failed_at;        // ISO 8601, as written
  std::string original_address; // where it failed: a replay sends it back there
  std::string stream_offset;    // bus-fault-stream-offset: read from a stream, at this offset
  std::vector<std::pair<std::string, std::string>> headers; // every header, in order
};

// The fault facts of `msg`, read from its headers; `queue` is where it sits.
[[nodiscard]] failed_message failed_message_of(const envelope& msg, const std::string& queue);

// Failed messages of one endpoint that failed with one exception type: what
// an operator replays or deletes together, once the cause is fixed.
struct failed_group {
  std::string queue;
  std::string endpoint;
  std::string exception_type;
  std::size_t count = 0;
  std::string first_seen; // the earliest bus-fault-at of the group (ISO 8601 sorts as text)
  std::string last_seen;
  std::string example; // the exception text of its latest failure
};

// The groups of `messages`, most numerous first, ties by endpoint and type.
[[nodiscard]] std::vector<failed_group> group_failed(const std::vector<failed_message>& messages);

// Which messages an operation acts on.
using failed_selector = std::function<bool(const failed_message&)>;

// What an operator does to error queues through a transport. Every member
// may be called from any thread; failures are values.
class error_queue_access {
public:
  virtual ~error_queue_access() = default;

  // The messages of `queue` from its head, at most `limit` (0: all); they
  // stay on the queue. errc::unknown_queue if there is no such queue.
  [[nodiscard]] virtual result<std::vector<failed_message>> read(const std::string& queue,
                                                                 std::size_t limit) = 0;

  // Sends each selected message of `queue` back to where it failed (its
  // original address, else `fallback`) with the replay headers
  // (bus/replay_headers.hpp), and removes it from `queue` only once the
  // copy is queued: never on neither queue. Returns how many went.
  [[nodiscard]] virtual result<std::size_t> replay(const std::string& queue,
                                                   const failed_selector& selected,
                                                   const std::string& fallback, time_point now) = 0;

  // Deletes the selected messages of `queue`; returns how many.
  [[nodiscard]] virtual result<std::size_t> purge(const std::string& queue,
                                                  const failed_selector& selected) = 0;
};

} // namespace bus
