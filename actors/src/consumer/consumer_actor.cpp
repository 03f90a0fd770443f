#include "consumer/consumer_actor.hpp"

#include <random>

#include <caf/all.hpp>

#include "atoms.hpp"
#include "consumer/attempt.hpp"
#include "consumer/endings.hpp"
#include "consumer/outbox.hpp"

namespace bus::detail {

namespace {

// Whether the message event for a completion or timer is still the
// current delivery's (a stop may have taken it back meanwhile).
bool is_current(consumer* self, std::uint64_t tag) {
  auto& cur = self->state.current;
  if (!cur || cur->item.tag != tag)
    return false;
  if (cur->claim->taken_back()) {
    cur.reset(); // a stop gave it back while this consumer waited
    return false;
  }
  return true;
}

} // namespace

caf::behavior consumer_actor(consumer* self, endpoint_runtime_ptr rt, caf::actor endpoint,
                             caf::actor scheduler, std::shared_ptr<redelivery_memory> redeliveries,
                             std::shared_ptr<ready_line> ready) {
  auto& st = self->state;
  st.rt = std::move(rt);
  st.endpoint = std::move(endpoint);
  st.scheduler = std::move(scheduler);
  st.redeliveries = std::move(redeliveries);
  st.ready = std::move(ready);
  const auto& seed = st.rt->config().jitter_seed;
  // A fixed seed still differs per consumer (its actor id), so that slots
  // do not jitter in lockstep.
  st.jitter.seed(seed ? *seed + self->id() : std::random_device{}());
  return {
    [=](run_atom, delivery& d, claim_ptr& claim, bool throttled) {
      begin(self, std::move(d), std::move(claim), throttled, false);
    },
    // Taken from the ready line as the one before ended, and named in its
    // report: the endpoint sends nothing else to a consumer it knows busy.
    [=](next_atom) {
      auto& st = self->state;
      if (st.current || !st.next)
        return;
      auto n = std::move(*st.next);
      st.next.reset();
      begin(self, std::move(n.item), std::move(n.claim), false, false);
    },
    // The single probe of a half-open dependency breaker.
    [=](probe_atom, delivery& d, claim_ptr& claim, bool throttled) {
      begin(self, std::move(d), std::move(claim), throttled, true);
    },
    [=](adopt_atom, delivery& d, claim_ptr& claim, bool throttled, int attempt,
        const std::string& why) {
      adopt(self, std::move(d), std::move(claim), throttled, attempt, why);
    },
    [=](sent_atom, std::uint64_t tag, ending_step step, result<void>& sent) {
      if (!is_current(self, tag))
        return;
      if (step == ending_step::outbox)
        outbox_sent(self, std::move(sent));
      else
        ending_sent(self, step, sent);
    },
    [=](again_atom, std::uint64_t tag) {
      if (is_current(self, tag))
        try_again(self);
    },
    [=](retry_atom, std::uint64_t tag) {
      if (is_current(self, tag))
        retry_attempt(self);
    },
    // A new scheduler, after the endpoint noticed the old one died.
    [=](scheduler_atom, caf::actor& scheduler) {
      scheduler_replaced(self, std::move(scheduler));
    },
  };
}

} // namespace bus::detail
