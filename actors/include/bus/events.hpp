// What happens to each message, as a stream of events: for test harnesses,
// the scenario runner and dashboards. An observer is optional; without one
// the bus pays a null check per step.
//
// The observer is called on the actor's thread, for every endpoint: it
// must be thread-safe, quick, and must not throw (what it throws is
// swallowed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "bus/time.hpp"

namespace bus {

enum class event_kind {
  received,             // the endpoint took a delivery from the transport
  handled,              // the handler succeeded (outbox released)
  failed,               // an attempt failed; the decision follows as its own event
  immediate_retry,      // the handler runs again after `delay`
  redelivery_scheduled, // the scheduler holds it for `delay`
  dead_lettered,        // moved to the error queue
  discarded,            // dropped by a rule, or a terminal failure with discard_faulted
  skipped,              // no handler: moved to the skipped queue (or dropped)
  requeued,             // given back to the transport unfinished
  rate_limit_started,   // the endpoint went to one message at a time
  rate_limit_ended,     // full concurrency again
  // Dependency breakers (detail: the dependency's name and why). The state
  // events are raised by each endpoint that depends on it, as it learns.
  dependency_opened,    // the breaker opened: its endpoints take no messages
  dependency_half_open, // its wait is over: one probe may go through
  dependency_closed,    // the probe succeeded: its endpoints take messages again
  endpoint_paused,      // this endpoint stopped taking messages (a dependency is not closed)
  endpoint_resumed,     // every dependency of this endpoint is closed again
  held_back,            // a message went back to its endpoint's waiting line unharmed:
                        // its dependency is down, no attempt spent
  retry_denied,         // the retry budget refused a retry; `detail` names the fallback taken
  expired,              // not run: past its bus-expires-at; discarded or dead-lettered follows
};

[[nodiscard]] std::string_view to_string(event_kind kind) noexcept;

struct bus_event {
  event_kind kind = event_kind::received;
  time_point at{};
  std::string endpoint;
  std::string message_id;   // empty for rate limit events
  std::string message_type;
  int attempt = 0;                  // attempts in this delivery, this one included
  std::uint32_t delivery_count = 0; // redeliveries performed before this delivery
  duration delay{};                 // immediate_retry, redelivery_scheduled
  std::string exception_type;       // failed and what follows a failure
  std::string detail;               // the exception's message or the reason
};

using event_observer = std::function<void(const bus_event&)>;

} // namespace bus
