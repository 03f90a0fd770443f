#include "endpoint_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"
#include "circuit_breaker_actor.hpp"
#include "inbox_cleaner_actor.hpp"
#include "outbox_sweeper_actor.hpp"
#include "consumer/consumer_actor.hpp"
#include "delivery_steps.hpp"
#include "dependency_pause.hpp"
#include "scheduler_actor.hpp"

namespace bus::detail {

namespace {

using endpoint = caf::stateful_actor<endpoint_state>;

// A consumer with a thread of its own unless its handlers never block (or
// the test coordinator runs everything inline): see bus::handler_threads.
caf::actor spawn_consumer_actor(endpoint* self) {
  auto& st = self->state;
  auto me = caf::actor_cast<caf::actor>(self);
  if (st.rt->config().deterministic
      || st.rt->definition().threads == handler_threads::caf_workers)
    return self->spawn<caf::monitored>(consumer_actor, st.rt, me, st.scheduler, st.redeliveries,
                                       st.ready);
  return self->spawn<caf::monitored + caf::detached>(consumer_actor, st.rt, me, st.scheduler,
                                                     st.redeliveries, st.ready);
}

void spawn_consumer(endpoint* self) {
  auto c = spawn_consumer_actor(self);
  self->state.consumers.emplace(c.address(), c);
  self->state.idle.push_back(std::move(c));
}

// Takes back up to `n` offers no consumer took yet, to the front of the
// waiting line in their order.
void withdraw_offers(endpoint* self, std::size_t n) {
  auto& st = self->state;
  if (st.offered.empty() || n == 0)
    return;
  auto back = st.ready->withdraw(n);
  for (auto d = back.rbegin(); d != back.rend(); ++d) {
    st.offered.erase(d->id);
    st.waiting.push_front(std::move(d->item));
  }
}

// A consumer named the offer it took as it reported the delivery before
// (the mutex of the ready line gave it to this consumer alone): it works
// on that one now.
void took_offer(endpoint* self, const caf::actor_addr& consumer, std::uint64_t id) {
  auto& st = self->state;
  auto offer = st.offered.find(id);
  if (offer == st.offered.end())
    return; // cannot be: an offer leaves the record taken or withdrawn, never both
  auto work = std::move(offer->second);
  st.offered.erase(offer);
  st.busy.emplace(consumer, std::move(work));
}

// Every consumer is busy and deliveries wait: up to one per slot is
// offered ahead, for whichever consumer ends its current one first.
void offer_ahead(endpoint* self) {
  auto& st = self->state;
  if (!st.ready || st.limited || !st.idle.empty())
    return;
  while (!st.waiting.empty() && st.offered.size() < st.rt->definition().slots) {
    auto claim = std::make_shared<delivery_claim>();
    auto id = ++st.offers;
    st.offered.emplace(id, work_in_progress{st.waiting.front(), claim, 1, time_point{}, 0});
    st.ready->offer(offered_delivery{id, std::move(st.waiting.front()), std::move(claim)});
    st.waiting.pop_front();
  }
}

void dispatch(endpoint* self) {
  auto& st = self->state;
  // Not started yet, or stopping: whatever waits goes back to its queue at
  // the stop, not to a consumer.
  if (!st.started || st.stopping)
    return;
  // A dependency is down: nothing goes out but a half-open breaker's probe.
  if (dependencies::paused_dispatch(self)) {
    withdraw_offers(self, st.offered.size());
    return;
  }
  // Rate limited, one at a time: nothing is offered ahead. Idle consumers
  // take what was offered before anything that waits here: an offer is
  // older than every delivery waiting behind it, and a consumer that took
  // a newer one first would run one slot's messages out of their order.
  if (st.limited)
    withdraw_offers(self, st.offered.size());
  else
    withdraw_offers(self, st.idle.size());
  // With adaptive slots there are more idle consumers than the limit allows.
  while (!st.idle.empty() && !st.waiting.empty() && st.busy.size() < st.limit->allowed()) {
    // Rate limited: one message at a time, and none while waiting after a
    // failed attempt.
    if (st.limited && (!st.busy.empty() || st.pausing))
      return;
    auto consumer = std::move(st.idle.back());
    st.idle.pop_back();
    auto d = std::move(st.waiting.front());
    st.waiting.pop_front();
    auto claim = std::make_shared<delivery_claim>();
    // Only adaptive slots read the clock: fixed ones pay nothing for them.
    auto at = st.limit->adaptive() ? st.rt->now() : time_point{};
    st.busy.emplace(consumer.address(), work_in_progress{d, claim, 1, at, st.busy.size() + 1});
    self->send(consumer, run_atom::value, std::move(d), std::move(claim), st.limited);
  }
  offer_ahead(self);
}

// A delivery that nothing will run here any more, during a stop, goes
// back to its queue; while the consumption is still being cancelled, only
// once that is done (consumption_cancelled), or the transport could hand
// it straight back to this endpoint.
void give_back(endpoint* self, const delivery& d) {
  auto& st = self->state;
  if (st.cancelling)
    st.waiting.push_back(d);
  else
    settle(*st.rt, d, outcome::requeue);
}

// A delivery held back for a dependency as the endpoint stops: nothing
// will run it here any more, so it goes back to its queue untouched.
void give_back_held(endpoint* self, const delivery& d) {
  const auto& rt = *self->state.rt;
  rt.log().endpoint->info("message {} was held back for a dependency while endpoint '{}' stops; "
                          "returning it to '{}'",
                          d.message->message_id, rt.name(), d.queue);
  give_back(self, d);
}

// Stopping ends only once every delivery sent to this actor before the
// transport's cancel returned has been seen: the check waits for the
// cancel, and goes through the mailbox, behind them.
void check_drained(endpoint* self) {
  const auto& st = self->state;
  if (st.stopping && !st.cancelling && st.busy.empty() && st.offered.empty() && st.waiting.empty())
    self->send(self, drained_atom::value);
}

// The last step of a stop, once the scheduler and the circuit breaker have
// confirmed theirs: only now is the endpoint finished, so that stop() and
// stopped() never report a stop while pending redeliveries are still on
// their way back to the queue.
void quit_when_helpers_stopped(endpoint* self) {
  auto& st = self->state;
  if (--st.helpers_stopping > 0)
    return;
  st.rt->log().endpoint->info("endpoint '{}' stopped", st.rt->name());
  st.rt->run().finished.store(true);
  self->quit();
}

// Asks a helper actor to stop and waits for its confirmation. An error
// (it is gone already) counts as stopped: there is nothing left to wait for.
void stop_helper(endpoint* self, const caf::actor& helper) {
  ++self->state.helpers_stopping;
  self->request(helper, caf::infinite, stop_atom::value)
    .then([=](ok_atom) { quit_when_helpers_stopped(self); },
          [=](caf::error&) { quit_when_helpers_stopped(self); });
}

void spawn_scheduler(endpoint* self);

// The scheduler returns what it still holds to the input queue first. One
// that died before it could leaves its memory to a new one, which returns
// it (once: a scheduler that dies again is a bug that would loop).
void stop_scheduler(endpoint* self, bool replaced) {
  ++self->state.helpers_stopping;
  self->request(self->state.scheduler, caf::infinite, stop_atom::value)
    .then([=](ok_atom) { quit_when_helpers_stopped(self); },
          [=](caf::error&) {
            auto& st = self->state;
            if (!replaced && st.redeliveries->holds_any()) {
              --st.helpers_stopping;
              spawn_scheduler(self);
              stop_scheduler(self, true);
              return;
            }
            quit_when_helpers_stopped(self);
          });
}

void stop_helpers(endpoint* self) {
  auto& st = self->state;
  stop_scheduler(self, false);
  if (st.breaker)
    stop_helper(self, st.breaker);
  if (st.cleaner)
    stop_helper(self, st.cleaner);
  if (st.sweeper)
    stop_helper(self, st.sweeper);
}

// Nothing is in flight any more: the consumers go, and once the last is
// down (a consumer blocked in a handler whose message was given back goes
// when the handler returns), the helpers.
void finish(endpoint* self) {
  auto& st = self->state;
  if (st.finishing)
    return; // a late drained or overdue message after the stop began
  st.finishing = true;
  st.idle.clear();
  dependencies::leave(self);
  if (st.consumers.empty()) {
    stop_helpers(self);
    return;
  }
  for (auto& [addr, consumer] : st.consumers)
    self->send_exit(consumer, caf::exit_reason::user_shutdown);
}

// The consumption is cancelled: no delivery comes after the ones already
// in the mailbox. Those that never reached a consumer go back now, not
// while the transport could still hand them to this endpoint again; for
// the same reason the drain timeout, which gives back what handlers still
// hold, only starts now.
void consumption_cancelled(endpoint* self) {
  auto& st = self->state;
  st.cancelling = false;
  for (auto& d : st.waiting)
    settle(*st.rt, d, outcome::requeue);
  st.waiting.clear();
  self->delayed_send(self, st.rt->definition().drain_timeout, overdue_atom::value);
  check_drained(self);
}

// A transport's cancel may wait for its broker (RabbitMQ's basic.cancel,
// up to the operation timeout): on a thread of its own, never on a CAF
// worker that every other actor needs. Its answer comes after every
// delivery the transport handed over before the cancel returned.
caf::behavior canceller_actor(caf::event_based_actor* self, endpoint_runtime_ptr rt,
                              caf::actor endpoint) {
  try {
    rt->transport().cancel(rt->name());
  } catch (const std::exception& e) {
    // Against the transport's contract; the stop goes on all the same.
    rt->log().endpoint->error("cancelling the consumption of '{}' failed: {}", rt->name(),
                              e.what());
  }
  self->send(endpoint, cancelled_atom::value);
  return {}; // done: the actor ends here
}

void begin_stop(endpoint* self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  // What was offered ahead and not taken goes back with what waits here.
  withdraw_offers(self, st.offered.size());
  // Before the bus's go, a failed start cancelled the consumption itself.
  if (!st.started) {
    consumption_cancelled(self);
    return;
  }
  if (st.rt->config().deterministic) { // the test coordinator runs no threads
    st.rt->transport().cancel(st.rt->name());
    consumption_cancelled(self);
    return;
  }
  st.cancelling = true;
  self->spawn<caf::detached>(canceller_actor, st.rt, caf::actor_cast<caf::actor>(self));
}

// The scheduler and the breaker are monitored: should one die, a new one
// takes over and every consumer learns of it.
void spawn_scheduler(endpoint* self) {
  auto& st = self->state;
  st.scheduler = self->spawn<caf::monitored>(scheduler_actor, st.rt, st.redeliveries);
}

// The breaker calls the user's callbacks, which may take their time: on a
// thread of its own, never on a CAF worker that every other actor needs.
void spawn_breaker(endpoint* self) {
  auto& st = self->state;
  if (st.rt->config().deterministic) // the test coordinator runs no threads
    st.breaker = self->spawn<caf::monitored>(circuit_breaker_actor, st.rt);
  else
    st.breaker = self->spawn<caf::monitored + caf::detached>(circuit_breaker_actor, st.rt);
}

// One attempt's outcome, in the order the attempts happened: a transition
// changes dispatching at once and goes to the breaker for its side effects.
void record_attempt(endpoint* self, bool succeeded) {
  auto& st = self->state;
  if (!st.limiter)
    return;
  auto t = succeeded ? st.limiter->record_success() : st.limiter->record_failure();
  if (t == rate_limiter::transition::none)
    return;
  auto& c = st.rt->counters();
  st.limited = t == rate_limiter::transition::started;
  c.rate_limited.store(st.limited);
  if (st.limited) {
    c.rate_limit_episodes.fetch_add(1, std::memory_order_relaxed);
    withdraw_offers(self, st.offered.size()); // one at a time from now on
  } else
    st.pausing = false;
  self->send(st.breaker, limit_atom::value, st.limited);
}

// A delivery ended (not held back): adaptive slots take its latency.
void learn_latency(endpoint* self, const work_in_progress& work, bool failed) {
  auto& st = self->state;
  if (!st.limit->adaptive())
    return;
  auto now = st.rt->now();
  auto line = st.limit->ended(now - work.dispatched, work.in_flight, failed, now);
  st.rt->counters().concurrency_limit.store(st.limit->shown(), std::memory_order_relaxed);
  if (line)
    st.rt->log().endpoint->info("endpoint '{}' now runs up to {} handlers at once (adaptive "
                                "slots, {} to {})",
                                st.rt->name(), *line, st.rt->definition().adaptive->min,
                                st.rt->definition().adaptive->max);
}

// A helper died before the end of a stop began (a bug, or a transport
// that broke its promise not to throw). What a scheduler held in memory
// is the endpoint's: the new one takes it over.
void replace_helper(endpoint* self, const caf::down_msg& dm, bool scheduler) {
  auto& st = self->state;
  const auto* which = scheduler ? "scheduler" : "circuit breaker";
  st.rt->log().endpoint->error("the {} of endpoint '{}' died ({}); a new one takes over", which,
                               st.rt->name(), self->system().render(dm.reason));
  if (scheduler) {
    spawn_scheduler(self);
    for (auto& [addr, consumer] : st.consumers)
      self->send(consumer, scheduler_atom::value, st.scheduler);
    return;
  }
  spawn_breaker(self); // the count lives here: nothing else is lost
}

} // namespace

bool offers_ahead(const endpoint_runtime& rt) {
  const auto& def = rt.definition();
  return def.threads == handler_threads::dedicated && !def.adaptive
         && def.rate_limit.consecutive_failures == 0 && def.dependencies.empty()
         && rt.prefetches_ahead();
}

caf::behavior endpoint_actor(endpoint* self, endpoint_runtime_ptr rt) {
  self->state.rt = std::move(rt);
  auto& st = self->state;
  st.busy.publish_to(st.rt->counters().busy_slots);
  if (offers_ahead(*st.rt))
    st.ready = std::make_shared<ready_line>();
  spawn_scheduler(self);
  if (st.rt->definition().rate_limit.consecutive_failures > 0) {
    st.limiter.emplace(st.rt->definition().rate_limit);
    spawn_breaker(self);
  }
  if (st.rt->definition().store) {
    // Their store's calls block: threads of their own, as a consumer's.
    if (st.rt->config().deterministic) {
      st.cleaner = self->spawn(inbox_cleaner_actor, st.rt);
      st.sweeper = self->spawn(outbox_sweeper_actor, st.rt);
    } else {
      st.cleaner = self->spawn<caf::detached>(inbox_cleaner_actor, st.rt);
      st.sweeper = self->spawn<caf::detached>(outbox_sweeper_actor, st.rt);
    }
  }
  st.limit.emplace(st.rt->definition().slots, st.rt->definition().adaptive);
  st.rt->counters().concurrency_limit.store(st.limit->shown(), std::memory_order_relaxed);
  for (std::size_t i = 0; i < st.rt->definition().slots; ++i)
    spawn_consumer(self);
  dependencies::join(self);

  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    auto helper = dm.source == st.scheduler.address()                  ? 1
                  : st.breaker && dm.source == st.breaker.address() ? 2
                                                                      : 0;
    if (helper != 0) {
      // Replaced during a stop too, so that a consumer waiting on the dead
      // scheduler's answer learns of it and gives its message back. Once
      // the stop's end has begun, stop_helper() waits for them instead.
      if (!st.finishing)
        replace_helper(self, dm, helper == 1);
      return;
    }
    auto consumer = st.consumers.find(dm.source);
    if (consumer == st.consumers.end())
      return;
    st.consumers.erase(consumer);
    if (st.finishing) {
      if (st.consumers.empty())
        stop_helpers(self);
      return;
    }
    st.idle.erase(std::remove_if(st.idle.begin(), st.idle.end(),
                                 [&](const caf::actor& a) { return a.address() == dm.source; }),
                  st.idle.end());
    auto it = st.busy.find(dm.source);
    if (it == st.busy.end()) {
      if (!st.stopping) {
        spawn_consumer(self);
        dispatch(self);
      }
      check_drained(self);
      return;
    }
    auto work = std::move(it->second);
    st.busy.erase(it);
    auto why = "the consumer actor died during attempt " + std::to_string(work.attempt) + " ("
               + self->system().render(dm.reason) + ")";
    if (st.stopping) {
      // Draining: no new consumer; the message goes back, nothing is lost.
      st.rt->log().endpoint->error("{} of message {} while endpoint '{}' stops; returning it to '{}'",
                                   why, work.item.message->message_id, st.rt->name(),
                                   work.item.queue);
      st.rt->counters().failed_attempts.fetch_add(1, std::memory_order_relaxed);
      give_back(self, work.item);
      check_drained(self);
      return;
    }
    // A failed attempt like any other: its successor takes the slot and
    // the message, and asks the policy what follows.
    st.rt->log().endpoint->error("{} of message {} on endpoint '{}'; a new consumer takes it over",
                                 why, work.item.message->message_id, st.rt->name());
    spawn_consumer(self);
    auto successor = std::move(st.idle.back());
    st.idle.pop_back();
    work.claim = std::make_shared<delivery_claim>();
    st.busy.emplace(successor.address(), work);
    self->send(successor, adopt_atom::value, std::move(work.item), std::move(work.claim),
               st.limited, work.attempt, std::move(why));
  });

  if (st.limit->adaptive())
    st.rt->log().endpoint->info("endpoint '{}' started with adaptive slots: {} to {}, from {}",
                                st.rt->name(), st.rt->definition().adaptive->min,
                                st.rt->definition().slots, st.limit->shown());
  else
    st.rt->log().endpoint->info("endpoint '{}' started with {} slots", st.rt->name(),
                                st.rt->definition().slots);

  return {
    [=](deliver_atom, delivery& d) {
      auto& st = self->state;
      auto& c = st.rt->counters();
      c.received.fetch_add(1, std::memory_order_relaxed);
      c.in_flight.fetch_add(1, std::memory_order_relaxed);
      st.rt->emit(event_kind::received, *d.message);
      if (st.stopping) {
        give_back(self, d);
        return;
      }
      st.waiting.push_back(std::move(d));
      dispatch(self);
    },
    // The consumer settled the delivery itself: the slot is free again,
    // unless the consumer took an offer ahead (`taken`, or 0).
    [=](done_atom, std::uint64_t tag, outcome result, std::uint64_t taken) {
      auto& st = self->state;
      auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto it = st.busy.find(sender);
      if (it == st.busy.end() || it->second.item.tag != tag) {
        // Taken back by a stop's drain timeout: the report is dropped, not
        // the offer the consumer went on to.
        if (taken != 0)
          took_offer(self, sender, taken);
        return;
      }
      // Held back for a dependency: first in line again, still unsettled;
      // during a stop, back to its queue, as what waited for a consumer
      // went when the stop began (nothing is dispatched any more).
      if (result == outcome::held && st.stopping)
        give_back_held(self, it->second.item);
      else if (result == outcome::held)
        st.waiting.push_front(std::move(it->second.item));
      else
        learn_latency(self, it->second, result != outcome::handled);
      st.busy.erase(it);
      dependencies::ended(self, tag, result);
      if (result == outcome::held)
        dependencies::sync(self); // pause now, not when the gate's notice arrives
      if (taken != 0)
        took_offer(self, sender, taken);
      else if (auto consumer = st.consumers.find(sender); consumer != st.consumers.end())
        st.idle.push_back(consumer->second);
      // A handled delivery's last attempt succeeded; a failed attempt was
      // reported before this, by the same consumer, so it is counted
      // already: the attempt that trips the limit is never missed here.
      if (result == outcome::handled)
        record_attempt(self, true);
      auto failed = result == outcome::scheduled || result == outcome::dead_lettered
                    || result == outcome::discarded;
      if (st.limited && failed) {
        st.pausing = true;
        self->delayed_send(self, st.rt->definition().rate_limit.wait_between_attempts,
                           resume_atom::value, ++st.pause_generation);
      }
      dispatch(self);
      check_drained(self);
    },
    // A failed attempt, from a consumer of a rate-limited endpoint.
    [=](attempt_atom) { record_attempt(self, false); },
    // A dependency breaker changed state, or an open one's wait is over.
    [=](dependency_atom) {
      dependencies::sync(self);
      dispatch(self);
    },
    [=](retrying_atom, std::uint64_t tag, int attempt) {
      auto it = self->state.busy.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
      if (it != self->state.busy.end() && it->second.item.tag == tag)
        it->second.attempt = attempt;
    },
    [=](stop_atom) { begin_stop(self); },
    [=](cancelled_atom) { consumption_cancelled(self); },
    // Every endpoint of the start consumes: what waits goes to consumers.
    [=](go_atom) {
      self->state.started = true;
      dispatch(self);
    },
    [=](resume_atom, std::uint64_t generation) {
      auto& st = self->state;
      if (generation != st.pause_generation || !st.pausing)
        return;
      st.pausing = false;
      dispatch(self);
    },
    [=](drained_atom) {
      const auto& st = self->state;
      if (st.busy.empty() && st.offered.empty() && st.waiting.empty())
        finish(self);
    },
    // The drain timeout passed: what no consumer is ending right now goes
    // back to the transport. A consumer blocked in its handler keeps its
    // thread until the handler returns, and then drops its outcome; one
    // that is ending its delivery reports within the transport's timeout.
    [=](overdue_atom) {
      auto& st = self->state;
      for (auto it = st.busy.begin(); it != st.busy.end();) {
        if (!it->second.claim->take_back()) {
          ++it;
          continue;
        }
        const auto& d = it->second.item;
        st.rt->log().endpoint->warn(
          "endpoint '{}' stopped before message {} was done; returning it to '{}'", st.rt->name(),
          d.message->message_id, d.queue);
        settle(*st.rt, d, outcome::requeue);
        // A handler blocked in its attempt's database connection returns
        // now, with an error; its consumer goes, and the stop with it.
        it->second.claim->interrupt();
        it = st.busy.erase(it);
      }
      check_drained(self);
    },
  };
}

} // namespace bus::detail
