// Tells a stranded delay level from a busy one, from what the management
// API says of each level now and then (docs/rabbitmq.md, "Stranded delay
// levels"). Pure: the samples and the time are passed in.
//
// A level's messages expire in order after its TTL and are dead-lettered
// to the next level. While RabbitMQ forwards one, it is counted in
// `messages` and not in `messages_ready`: it is held. A level that
// forwards holds a few, for milliseconds; a level whose dead-letter worker
// is not running (RabbitMQ 3.10.8 after a leader change, rabbitmq-server
// #7677) keeps every message that expires, so that once its TTL (and a
// margin) has passed since a look, it holds at least what it held then
// plus every message that was ready then. A level counts as stranded when
// that has held since a checkpoint for longer than its TTL plus the margin;
// any look with fewer moves the checkpoint. However busy a working level
// is, the messages ready at a look have left it a TTL later.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bus/transport.hpp"
#include "delay_levels.hpp"

namespace bus::detail {

// One level as the management API showed it.
struct level_sample {
  std::string queue;
  std::uint64_t messages = 0; // all it holds, the expired ones still to forward included
  std::uint64_t ready = 0;    // those waiting out their TTL
  std::string leader;         // the node that leads its quorum queue
};

// A level that turned stranded, or moved again, at a look.
struct level_change {
  std::string queue;
  bool stranded = false; // false: it forwards again
  std::uint64_t held = 0;
  std::chrono::milliseconds stuck_for{};
  std::string leader;
};

class stranded_levels {
public:
  using clock = std::chrono::steady_clock;

  stranded_levels(const delay_levels& levels, std::chrono::milliseconds margin);

  // Takes one look at the levels (those of other level sets are ignored;
  // a level missing from it keeps its state) and returns what changed.
  std::vector<level_change> observe(const std::vector<level_sample>& samples,
                                    clock::time_point now);

  // The stranded levels as of the last look, with the remedy an operator runs.
  [[nodiscard]] std::vector<stalled_queue> stranded(clock::time_point now) const;

  // The operator's command that moves `queue`'s leader, which starts its
  // dead-letter worker again.
  [[nodiscard]] static std::string remedy(const std::string& queue);

private:
  struct state {
    std::chrono::milliseconds ttl{};
    std::uint64_t held = 0; // at the last look
    // The look since which nothing has been seen to leave.
    clock::time_point checkpoint_at{};
    std::uint64_t held_then = 0;
    std::uint64_t ready_then = 0;
    bool seen = false;
    bool stranded = false;
    std::string leader;
  };
  std::chrono::milliseconds margin_;
  std::map<std::string, state> levels_;
};

} // namespace bus::detail
