// The recoverability decision, a pure function: configuration and error
// context in, action out; the time comes in the context and the randomness
// (jitter) from the caller's generator. The consumer carries it out.
#pragma once

#include "bus/policy/action.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/error_context.hpp"
#include "bus/policy/random.hpp"

namespace bus {

// The decision without a custom policy (NServiceBus's
// DefaultRecoverabilityPolicy), in this order:
//  1. an unrecoverable exception (declared, or a deserialization failure)
//     goes to the error queue;
//  2. the rule that matches decides (rule_set::match); no rule: the error
//     queue;
//  3. a rule without tiers does its terminal action (dead_letter: the error
//     queue; discard);
//  4. a rule past its time limit (since the first failure) or its attempt
//     budget ends its chain;
//  4.5 a retry that would fire at or after the message's expiry
//     (context.expires_at), or a redelivery that would fire after the time
//     limit, ends its chain at once: the bus knows now that no
//     attempt is left in time (redeliveries every 10 h with a 24 h limit
//     end at 20 h, not 30 h);
//  5. while immediate_attempts <= the rule's retries: immediate retry,
//     delay of retry number immediate_attempts;
//  6. while delivery_count < the rule's redeliveries: delayed retry, delay
//     of redelivery number delivery_count + 1 (a fresh cycle of retries
//     follows it);
//  7. the chain is exhausted: its terminal action, the error queue unless
//     it is discard.
// With n retries and m redeliveries a handler that always fails runs
// (n + 1)(m + 1) times. A tier the endpoint cannot carry out counts as
// having no retries. The time since the first failure is measured without
// overflow whatever the two times are (a first failure after `now` counts
// as none). Draws once from `rng` for a jittered delay, never
// otherwise. Never throws what a user's predicate or delay function throws:
// the latter becomes a move to the error queue with the reason recorded.
[[nodiscard]] action default_policy(const recoverability_config& config,
                                    const error_context& context, random_source rng);

// The decision the runtime acts on. Reads `config` only, so one
// configuration may serve many consumers deciding at once, each with its
// own generator. Looks into the exception once (none at all when the
// context carries the runtime's caught_exception, see error_context_for):
// every rule, the unrecoverable list, predicates and delay functions are
// then answered without a rethrow for an exception derived from
// std::exception.
//  - a deserialization failure goes to the error queue, without asking the
//    custom policy;
//  - otherwise the custom policy decides if there is one (what it throws
//    becomes a move to the error queue), else default_policy();
//  - the safety fallback then applies (apply_capabilities).
[[nodiscard]] action decide(const recoverability_config& config, const error_context& context,
                            random_source rng);

// The safety fallback (NServiceBus's, which cannot be turned off): an
// immediate retry when immediate retries are not available, or a delayed
// retry when the transport has no delayed delivery, becomes a move to the
// error queue whose reason names the action refused and why. A negative
// delay becomes zero; a delay above max_scheduled_delay (365 days) becomes
// max_scheduled_delay, with the delay asked for in the action's
// clamped_from so that the runtime can log a warning. Anything else is
// returned unchanged.
[[nodiscard]] action apply_capabilities(action decided, const recoverability_config& config);

} // namespace bus
