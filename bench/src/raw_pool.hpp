// The raw CAF baseline of an endpoint: what the bus does for a message,
// written directly on CAF. A dispatcher actor keeps the backlog and gives
// each message to an idle worker, at most N in flight (the endpoint's
// slots); a worker runs the handler and acknowledges to the dispatcher,
// which hands it the next message. A failed attempt is retried the way the
// bus's consumer does it: an immediate retry is a delayed message to itself,
// the slot held; a redelivery goes back to the dispatcher after its delay
// (CAF's clock holds it, as the bus's scheduler does) and the slot is free
// meanwhile.
#pragma once

#include <functional>
#include <memory>

#include <caf/fwd.hpp>

#include "workload.hpp"

namespace bench {

// Runs on a worker for each attempt (the first is 1); throws to fail it.
// A worker retries a failed attempt once, after `retry_delay`: holding its
// slot, or as a redelivery if `redeliver`.
struct raw_work {
  std::function<void(const ping&, int attempt)> handle;
  std::chrono::milliseconds retry_delay{0};
  bool redeliver = false;
};

// The dispatcher; send it `ping`s. Its workers are linked to it: an exit
// message to the dispatcher ends them all. `detached`: each worker is a
// detached actor (a thread of its own), the raw form of the endpoint's
// default handler_threads::dedicated.
[[nodiscard]] caf::actor spawn_raw_pool(caf::actor_system& sys, int workers,
                                        std::shared_ptr<const raw_work> work,
                                        bool detached = false);

} // namespace bench
