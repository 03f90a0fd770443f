// Messages a user asked to deliver later (message_bus::send_at and
// send_after, handler_context::defer), held the way redeliveries are: a
// transport with delayed delivery (RabbitMQ's delay levels) holds them
// itself, so they survive the death of this process; otherwise one actor
// per bus holds them on the actor system's clock (virtual time on CAF's
// test coordinator), in a delay_queue with one timer armed at a time.
//
// In memory nothing survives the process anyway: what the holder still
// holds when the bus is destroyed is logged as lost, with each message id.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <caf/actor.hpp>

#include "bus/transport.hpp"
#include "logging.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace bus::detail {

class scheduled_sends {
public:
  scheduled_sends(caf::actor_system& system, transport_ptr transport, loggers log,
                  std::string dead_letter_directory);
  ~scheduled_sends(); // ends the holder actor, if one was spawned
  scheduled_sends(const scheduled_sends&) = delete;
  scheduled_sends& operator=(const scheduled_sends&) = delete;

  // Puts `msg` on `queue` (empty: publishes it) once `delay` has passed.
  // `done` is called exactly once: when the broker holds it (a refusal is
  // its error), or, in memory, inline once the holder has it in its
  // mailbox (a later refusal by the transport is logged and tried again
  // a second later if it is for now; one for good is appended to
  // scheduled-sends.dead-letters.jsonl in `dead_letter_directory`).
  // Thread-safe; never blocks.
  void send_later(std::string queue, envelope msg, duration delay, completion done);

private:
  caf::actor holder(); // spawned on first use

  caf::actor_system* system_;
  transport_ptr transport_;
  loggers log_;
  std::string dead_letter_directory_;
  std::mutex mutex_; // guards holder_
  caf::actor holder_;
};

} // namespace bus::detail
