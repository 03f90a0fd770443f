// The messages a stress run sends. Each carries its sequence number, so a
// handler can tell one delivery from another without the envelope.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace stress {

// Handled by a function handler on every endpoint.
struct job {
  std::uint64_t seq = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(job, seq)

// Handled by each endpoint's handler actor (handle_with_actor), which may
// kill the consumer that asks; inspectable, since it travels in a CAF
// message.
struct actor_job {
  std::uint64_t seq = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(actor_job, seq)

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, actor_job& x) {
  return f(x.seq);
}

// Sent once to each endpoint after the workload; never fails, so an
// endpoint still rate limited by the last failures of the run recovers.
struct probe {
  std::uint64_t seq = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(probe, seq)

} // namespace stress
