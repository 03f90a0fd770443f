#include "circuit_breaker_actor.hpp"

#include <caf/all.hpp>

#include "atoms.hpp"

namespace bus::detail {

namespace {

using breaker = caf::stateful_actor<circuit_breaker_state>;

// A user's callback must not take the breaker down with it.
void call(const std::function<void()>& callback, const endpoint_runtime& rt, const char* which) {
  if (!callback)
    return;
  try {
    callback();
  } catch (const std::exception& e) {
    rt.log().rate_limit->error("the {} callback of endpoint '{}' threw: {}", which, rt.name(),
                               e.what());
  } catch (...) {
    rt.log().rate_limit->error("the {} callback of endpoint '{}' threw", which, rt.name());
  }
}

void started(breaker* self) {
  const auto& rt = *self->state.rt;
  const auto& settings = self->state.limiter.settings();
  rt.counters().rate_limited.store(true);
  rt.counters().rate_limit_episodes.fetch_add(1, std::memory_order_relaxed);
  rt.log().rate_limit->warn("rate limiting endpoint '{}' after {} consecutive failures: one "
                            "message at a time, {} between failed attempts",
                            rt.name(), settings.consecutive_failures,
                            to_hms(settings.wait_between_attempts));
  rt.emit(event_kind::rate_limit_started,
          std::to_string(settings.consecutive_failures) + " consecutive failures");
  self->send(self->state.endpoint, limit_atom::value, true);
  call(rt.definition().on_rate_limit_started, rt, "rate-limit-started");
}

void ended(breaker* self) {
  const auto& rt = *self->state.rt;
  rt.counters().rate_limited.store(false);
  rt.log().rate_limit->info("endpoint '{}' handled a message again: rate limiting ended",
                            rt.name());
  rt.emit(event_kind::rate_limit_ended, "a message succeeded");
  self->send(self->state.endpoint, limit_atom::value, false);
  call(rt.definition().on_rate_limit_ended, rt, "rate-limit-ended");
}

} // namespace

caf::behavior circuit_breaker_actor(breaker* self, endpoint_runtime_ptr rt, caf::actor endpoint) {
  self->state.limiter = rate_limiter(rt->definition().rate_limit);
  self->state.rt = std::move(rt);
  self->state.endpoint = std::move(endpoint);
  return {
    [=](attempt_atom, bool succeeded) {
      auto& limiter = self->state.limiter;
      auto t = succeeded ? limiter.record_success() : limiter.record_failure();
      if (t == rate_limiter::transition::started)
        started(self);
      else if (t == rate_limiter::transition::ended)
        ended(self);
    },
    // Whether the endpoint is limited, after every attempt reported so far.
    [=](status_atom) { return self->state.limiter.limited(); },
    [=](stop_atom) {
      self->quit();
      return ok_atom::value;
    },
  };
}

} // namespace bus::detail
