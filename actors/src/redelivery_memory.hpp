// What an endpoint's in-memory scheduler holds, kept by the endpoint
// rather than by the scheduler actor: when a scheduler dies (a bug, or a
// transport that breaks its promise not to throw), the one that replaces
// it takes over every message, so a death costs time, never a message.
//
// Three kinds of message live here:
// - those waiting for their due time (the heap);
// - those being handed to the transport when the owner died in that very
//   call (`in_hand_`) and not answered for: the call never returned, so
//   no answer comes;
// - those the transport refused to take back, recorded by the transport's
//   completion on its own thread, then taken by whichever scheduler owns
//   the memory at that moment, never by a dead one's mailbox.
//
// A consumer hands a redelivery over by putting it in the heap itself
// (accept), on its own thread: the message is held the moment the call
// returns, with no request to the scheduler and no answer back, and the
// scheduler is woken only when the new due time comes before its timer.
// A scheduler that died in between loses nothing: its replacement takes
// over the heap. So the heap and the answers' part are guarded by one
// mutex; `in_hand_` belongs to the owner alone (a replacement only starts
// after the previous owner is dead).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
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

// Messages handed to the transport in one call, until it has answered for
// each: what a replacement takes over if the owner died in that call.
struct returning_batch {
  explicit returning_batch(std::vector<pending_redelivery> m)
    : messages(std::move(m)), answered(messages.size(), false) {}
  std::vector<pending_redelivery> messages;
  std::vector<bool> answered; // guarded by the memory's mutex
};

// A return the transport refused, and why.
struct refused_return {
  pending_redelivery message;
  error why;
};

class redelivery_memory : public std::enable_shared_from_this<redelivery_memory> {
public:
  using time_point = caf::actor_clock::time_point;

  // What accept() did with a consumer's message.
  enum class accepted {
    no,              // the owner emptied the memory for a stop: nothing would return it
    yes,             // held; the owner wakes in time for it
    yes_wake_owner,  // held, due before the owner's next wake-up: tell it to arm
  };

  // A consumer's hand-off, from any thread. `held` runs under the lock
  // once the message is taken, before any timer can return it (the
  // redelivery_scheduled event goes there, so that it always comes first).
  template <class Held>
  [[nodiscard]] accepted accept(time_point due, pending_redelivery msg, Held&& held) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (closed_)
      return accepted::no;
    held();
    waiting_.push(due, std::move(msg));
    if (!(due < wake_at_))
      return accepted::yes;
    wake_at_ = due; // one wake-up asked for: later hand-offs need none
    return accepted::yes_wake_owner;
  }

  // The owner's own: keeps `msg` until `due`, even after a close (what a
  // dead owner left, or a refused return).
  void hold(time_point due, pending_redelivery msg);

  // The owner's: moves up to `max` messages due at `now` into `out`,
  // earliest first. Returns whether more are due.
  [[nodiscard]] bool take_due(time_point now, std::size_t max,
                              std::vector<pending_redelivery>& out);

  // The owner's: when to wake next, given the timer it has armed (if any).
  // Returns the earliest due time when a timer must be armed for it, and
  // remembers the wake-up, so that accept() knows which hand-offs need
  // the owner woken sooner.
  [[nodiscard]] std::optional<time_point> plan_wake(std::optional<time_point> armed);

  // The owner's, at a stop: every message waiting, earliest first; from
  // now on consumers' hand-offs are refused (the stop returns what waits,
  // and nobody would return one that came later).
  [[nodiscard]] std::vector<pending_redelivery> close_and_drain();

  // How many wait for their due time.
  [[nodiscard]] std::size_t waiting() const;

  // Makes `owner` the scheduler that the transport's answers wake (with a
  // returned_atom), and gives it what a dead owner left: the message it
  // was handing over and has no answer for, if any, then every refusal not
  // taken yet.
  // An answer wakes the owner only when it has something to do: a refusal
  // to take, or, once it asked (wake_when_idle), the last answer it waits
  // for. A million returns that succeed are not a million messages.
  [[nodiscard]] std::vector<pending_redelivery> take_over(const caf::actor_addr& owner);

  // Hands `msgs` to the transport's `send_back` in one call; each answer
  // is recorded here and may wake the owner.
  template <class Send>
  void hand_back(std::vector<pending_redelivery> msgs, Send&& send_back) {
    if (msgs.empty())
      return;
    auto batch = std::make_shared<returning_batch>(std::move(msgs));
    in_hand_ = batch;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      returning_ += batch->messages.size();
    }
    send_back(batch->messages, answer_for(batch));
    in_hand_.reset(); // the call returned: the answers still due will come
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
  indexed_completion answer_for(std::shared_ptr<returning_batch> batch);

  std::shared_ptr<returning_batch> in_hand_; // the owner's alone

  mutable std::mutex mutex_;
  delay_queue<time_point, pending_redelivery> waiting_; // guarded
  time_point wake_at_ = time_point::max(); // guarded: the owner's next wake-up, as planned
  bool closed_ = false;                  // guarded: emptied for a stop
  caf::actor_addr owner_;                // guarded
  std::size_t returning_ = 0;            // guarded: answers still to come
  bool wake_when_idle_ = false;          // guarded
  std::vector<refused_return> refused_;  // guarded: not taken by an owner yet
};

} // namespace bus::detail
