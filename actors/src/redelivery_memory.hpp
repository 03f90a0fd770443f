// What an endpoint's in-memory scheduler holds, kept by the endpoint
// rather than by the scheduler actor: when a scheduler dies (a bug, or a
// transport that breaks its promise not to throw), the one that replaces
// it takes over every message, so a death costs time, never a message.
//
// Three kinds of message live here:
// - those waiting for their due time (the heap);
// - the one being handed to the transport when the owner died in that
//   very call (`in_hand`): the call never returned, so no answer comes;
// - those the transport refused to take back, recorded by the transport's
//   completion on its own thread, then taken by whichever scheduler owns
//   the memory at that moment, never by a dead one's mailbox.
//
// The heap and `in_hand` belong to the scheduler that owns the memory; a
// replacement only starts after the previous one is dead, so they never
// have two users at once. The answers' part is shared with the transport's
// threads and guarded by a mutex.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>

#include "bus/delay_queue.hpp"
#include "bus/envelope.hpp"
#include "bus/error.hpp"
#include "bus/transport.hpp"

namespace bus::detail {

// A message on its way back: the scheduler's own copy, shared with the
// transport while it is handed over, so that a refused one is still whole.
using pending_redelivery = std::shared_ptr<envelope>;

// A return the transport refused, and why.
struct refused_return {
  pending_redelivery message;
  error why;
};

class redelivery_memory : public std::enable_shared_from_this<redelivery_memory> {
public:
  using time_point = caf::actor_clock::time_point;

  // Owned by the current scheduler only (see above).
  delay_queue<time_point, pending_redelivery> waiting;
  pending_redelivery in_hand;

  // Makes `owner` the scheduler that the transport's answers wake (with a
  // returned_atom), and gives it what a dead owner left: the message it
  // was handing over, if any, then every refusal not taken yet.
  // An answer wakes the owner only when it has something to do: a refusal
  // to take, or, once it asked (wake_when_idle), the last answer it waits
  // for. A million returns that succeed are not a million messages.
  [[nodiscard]] std::vector<pending_redelivery> take_over(const caf::actor_addr& owner);

  // Hands `msg` to the transport's `send_back`, which calls the
  // transport; the answer is recorded here and wakes the owner.
  template <class Send>
  void hand_back(pending_redelivery msg, Send&& send_back) {
    in_hand = msg;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      ++returning_;
    }
    send_back(msg, answer_for(msg));
    in_hand.reset(); // the call returned: its answer will come
  }

  // The refusals recorded since the last call, in the order they came.
  [[nodiscard]] std::vector<refused_return> take_refused();

  // Whether an answer of the transport is still to come.
  [[nodiscard]] bool returning() const;

  // From now on, the answer that leaves none to come wakes the owner too:
  // a stopping scheduler waits for it. Asked before looking at returning(),
  // so that the last answer is either seen there or wakes it.
  void wake_when_idle();

  // Whether anything is left to return: for the endpoint, once its
  // scheduler died, whether a new one must come to return it.
  [[nodiscard]] bool holds_any() const;

private:
  completion answer_for(pending_redelivery msg);

  mutable std::mutex mutex_;
  caf::actor_addr owner_;                // guarded
  std::size_t returning_ = 0;            // guarded: answers still to come
  bool wake_when_idle_ = false;          // guarded
  std::vector<refused_return> refused_;  // guarded: not taken by an owner yet
};

} // namespace bus::detail
