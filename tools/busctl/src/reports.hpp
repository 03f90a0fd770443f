// What each broker operation of busctl found or did, as plain values: the
// broker side fills them in, the renderers print them and exit_code_of()
// turns them into the exit code scripts rely on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "queued_message.hpp"

namespace bus::ctl {

// The messages of a queue, read without taking them away.
struct queue_listing {
  std::string queue;
  std::vector<queued_message> messages; // head first
  std::uint32_t consumers = 0; // consumers attached when it was read: what they hold is not listed
  bool truncated = false;      // --limit stopped the reading before the queue was read to its end
};

struct replayed_message {
  std::string id;
  std::string destination;
  std::string problem; // empty: replayed (confirmed by the broker, then removed from the queue)
};

struct replay_report {
  std::string queue;
  std::vector<replayed_message> replayed; // in queue order
  std::vector<replayed_message> failed;   // still on the queue
  std::vector<std::string> unknown_ids;
  // Set when the acknowledgements that removed replayed messages may not have
  // reached the broker: they may then be on both queues (never on neither).
  std::string warning;
  std::uint32_t consumers = 0;
  bool truncated = false;
};

struct purge_report {
  std::string queue;
  std::size_t purged = 0;
  std::vector<std::string> ids; // empty for a whole-queue purge, which the broker counts only
  std::vector<std::string> unknown_ids;
  std::string warning;
  std::uint32_t consumers = 0;
  bool truncated = false;
};

// 0 when everything asked for was done; 5 when the broker refused part of
// it; 1 when the selection (ids, a group or --all) selected nothing or an
// id was not found.
[[nodiscard]] exit_code exit_code_of(const replay_report& r);
[[nodiscard]] exit_code exit_code_of(const purge_report& r);

} // namespace bus::ctl
