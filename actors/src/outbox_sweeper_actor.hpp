// The outbox sweeper of an endpoint with an outbox: it keeps the store's
// lease alive, and sends what a dead process stored and never sent (or what
// this one gave up on), so that such sends do not wait for their message to
// come back, and sends with no message behind them at all go out too.
//
// Every sweep_interval (and once at its start) it renews the lease for
// three intervals, claims up to sweep_batch orphaned records, sends their
// stored messages through the transport's asynchronous calls and, once all
// of a record's are out, marks it dispatched; a record whose sends failed
// is released for a later sweep. A stored send that no longer reads goes to
// the endpoint's error queue with the reason, as one of its record's sends
// (the record stays until that queue has it), and blocks nothing else.
// Records of a live process are never claimed (message_store.hpp). The
// store's calls block: a thread of its own, inline on the test coordinator.
// (stop_atom) -> ok_atom, then it quits.
#pragma once

#include <cstdint>
#include <map>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "bus/message_store.hpp"
#include "endpoint_runtime.hpp"

namespace bus::detail {

struct outbox_sweeper_state {
  endpoint_runtime_ptr rt;
  struct sending {
    inbox_key key;
    std::size_t left = 0; // sends not completed yet
    bool failed = false;
  };
  std::map<std::uint64_t, sending> in_flight; // by claim number
  std::uint64_t claims = 0;
  static inline const char* name = "bus.outbox_sweeper";
};

// Where a store's lease ends when renewed at `now`: three sweep
// intervals on, so that a process that misses two sweeps keeps its
// records, and one that is gone lets them go after the third.
[[nodiscard]] inline time_point outbox_lease_end(time_point now, const outbox_options& o) {
  return now + 3 * o.sweep_interval;
}

caf::behavior outbox_sweeper_actor(caf::stateful_actor<outbox_sweeper_state>* self,
                                   endpoint_runtime_ptr rt);

} // namespace bus::detail
