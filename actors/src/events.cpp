#include "bus/events.hpp"

namespace bus {

std::string_view to_string(event_kind kind) noexcept {
  switch (kind) {
    case event_kind::received: return "received";
    case event_kind::handled: return "handled";
    case event_kind::failed: return "failed";
    case event_kind::immediate_retry: return "immediate_retry";
    case event_kind::redelivery_scheduled: return "redelivery_scheduled";
    case event_kind::dead_lettered: return "dead_lettered";
    case event_kind::discarded: return "discarded";
    case event_kind::skipped: return "skipped";
    case event_kind::requeued: return "requeued";
    case event_kind::rate_limit_started: return "rate_limit_started";
    case event_kind::rate_limit_ended: return "rate_limit_ended";
    case event_kind::dependency_opened: return "dependency_opened";
    case event_kind::dependency_half_open: return "dependency_half_open";
    case event_kind::dependency_closed: return "dependency_closed";
    case event_kind::endpoint_paused: return "endpoint_paused";
    case event_kind::endpoint_resumed: return "endpoint_resumed";
    case event_kind::held_back: return "held_back";
    case event_kind::retry_denied: return "retry_denied";
    case event_kind::expired: return "expired";
  }
  return "unknown";
}

} // namespace bus
