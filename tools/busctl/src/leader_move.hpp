// busctl move-leader: the remedy for a quorum queue that holds dead letters
// it does not forward (a stranded delay level, docs/rabbitmq.md). A leader
// change starts the queue's dead-letter worker again on the new leader.
//
// It asks rabbitmqctl, on a machine that can reach a node of the cluster,
// to move the queue's leadership to another member with Ra's
// transfer_leadership: an election, no change of membership and no data
// copied (rabbitmq-queues delete_member + add_member does the same through a
// membership change, and on 3.10.8 add_member once hung for minutes).
// Ra's "ok" is only the leader taking the request, so the move counts once
// the queue's record names another leader; a member that does not take it
// within 10 s is passed over for the next.
#pragma once

#include <string>
#include <vector>

#include "bus/error.hpp"

namespace bus::ctl {

// Where the leadership went.
struct leader_moved {
  std::string queue;
  std::string from; // Erlang node names
  std::string to;
};

// The Erlang expression rabbitmqctl eval runs (quoted for Erlang, so any
// queue or vhost name is safe). It prints "moved <from> <to>" once another
// member leads, or why not (not_found, single_member, no_running_member,
// not_moved with Ra's answers).
[[nodiscard]] std::string move_leader_expression(const std::string& vhost,
                                                 const std::string& queue);

// Runs `rabbitmqctl -q eval <expression>` (no shell between) and reads its
// answer. errc::unknown_queue if the queue does not exist,
// errc::transport_failure with rabbitmqctl's words for anything else.
[[nodiscard]] result<leader_moved> move_leader(const std::string& rabbitmqctl,
                                               const std::string& vhost, const std::string& queue);

} // namespace bus::ctl
