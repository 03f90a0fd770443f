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
                               rt.log().cut(e.what()));
  } catch (...) {
    rt.log().rate_limit->error("the {} callback of endpoint '{}' threw", which, rt.name());
  }
}

void started(const endpoint_runtime& rt) {
  const auto& settings = rt.definition().rate_limit;
  rt.log().rate_limit->warn("rate limiting endpoint '{}' after {} consecutive failures: one "
                            "message at a time, {} between failed attempts",
                            rt.name(), settings.consecutive_failures,
                            to_hms(settings.wait_between_attempts));
  rt.emit(event_kind::rate_limit_started,
          std::to_string(settings.consecutive_failures) + " consecutive failures");
  call(rt.definition().on_rate_limit_started, rt, "rate-limit-started");
}

void ended(const endpoint_runtime& rt) {
  rt.log().rate_limit->info("endpoint '{}' handled a message again: rate limiting ended",
                            rt.name());
  rt.emit(event_kind::rate_limit_ended, "a message succeeded");
  call(rt.definition().on_rate_limit_ended, rt, "rate-limit-ended");
}

} // namespace

caf::behavior circuit_breaker_actor(breaker* self, endpoint_runtime_ptr rt) {
  self->state.rt = std::move(rt);
  return {
    [=](limit_atom, bool limited) {
      if (limited)
        started(*self->state.rt);
      else
        ended(*self->state.rt);
    },
    [=](stop_atom) {
      self->quit();
      return ok_atom::value;
    },
  };
}

} // namespace bus::detail
