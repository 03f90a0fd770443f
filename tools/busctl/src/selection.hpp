// Which messages of an error queue a command acts on, and the grouping by
// exception type and message type that operators look at first. Pure
// functions over what was read from the queue.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "queued_message.hpp"

namespace bus::ctl {

// These ids (every message with one of them: after an at-least-once
// hiccup a queue can hold two copies of one message).
struct by_ids {
  std::vector<std::string> ids;
};

// Every message whose exception type and message type are these, each when
// given (at least one is). Exact, case-sensitive names, as `groups` prints
// them; an empty exception type matches messages without fault headers.
struct by_group {
  std::optional<std::string> exception_type;
  std::optional<std::string> message_type;
};

struct every_message {};

using selector = std::variant<by_ids, by_group, every_message>;

struct selection {
  std::vector<std::size_t> chosen;      // indices into the messages, in queue order
  std::vector<std::string> unknown_ids; // by_ids only: ids no message has, in the order given
};

[[nodiscard]] selection select(const std::vector<queued_message>& messages, const selector& s);

// The first message with this id, or nothing.
[[nodiscard]] const queued_message* find_by_id(const std::vector<queued_message>& messages,
                                               const std::string& id);

struct message_group {
  std::string exception_type; // empty: messages without fault headers (a skipped queue, say)
  std::string message_type;
  std::size_t count = 0;
  std::string first_failure_at; // earliest bus-fault-at in the group; empty if none had one
  std::string last_failure_at;
  std::vector<std::string> ids; // in queue order
};

// Largest group first; ties by exception type, then message type.
[[nodiscard]] std::vector<message_group> group_messages(const std::vector<queued_message>& messages);

} // namespace bus::ctl
