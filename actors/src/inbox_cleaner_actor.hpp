// The inbox cleaner of an endpoint with an outbox: every cleanup_interval
// it deletes the endpoint's inbox records dispatched longer than
// `retention` ago, a batch per transaction, until a batch comes back short.
// The store's calls block, so it runs on a thread of its own (inline on
// the test coordinator, where it keeps virtual time like everything else).
// A cleanup that fails is logged and tried at the next interval: deliveries
// never depend on it. (stop_atom) -> ok_atom, then it quits.
#pragma once

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "endpoint_runtime.hpp"

namespace bus::detail {

struct inbox_cleaner_state {
  endpoint_runtime_ptr rt;
  std::size_t cleaned = 0; // by the cleanup under way, over its batches
  static inline const char* name = "bus.inbox_cleaner";
};

caf::behavior inbox_cleaner_actor(caf::stateful_actor<inbox_cleaner_state>* self,
                                  endpoint_runtime_ptr rt);

} // namespace bus::detail
