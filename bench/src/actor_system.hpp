// The actor system of a case: --threads workers (2 by default: the cores
// the targets speak of). --relaxed-sleep-us sets how long an idle CAF
// worker sleeps between attempts to steal work (CAF's default is 10 ms),
// to show what that setting does to latency; the suite keeps the default.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/timespan.hpp>

#include <stdexcept>

#include "workload.hpp"

namespace bench {

inline void configure(caf::actor_system_config& cfg, const case_args& args) {
  cfg.set("scheduler.max-threads", args.number("threads", 2));
  if (auto us = args.number("relaxed-sleep-us", 0); us > 0)
    cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan(us * 1000));
  if (auto policy = args.text("policy", ""); policy == "sharing")
    cfg.set("scheduler.policy", caf::atom("sharing"));
  else if (!policy.empty() && policy != "stealing")
    throw std::runtime_error("--policy is stealing or sharing, not '" + policy + "'");
}

} // namespace bench
