// The recoverability configuration of one consumer: the resolved rules,
// the endpoint-wide settings (error queue, time limit, unrecoverable
// types, what the transport can do) and an optional custom policy.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bus/error.hpp"
#include "bus/policy/action.hpp"
#include "bus/policy/deadline.hpp"
#include "bus/policy/error_context.hpp"
#include "bus/policy/exception_type.hpp"
#include "bus/policy/random.hpp"
#include "bus/policy/retry_budget.hpp"
#include "bus/policy/rule_set.hpp"
#include "bus/policy/scopes.hpp"
#include "bus/time.hpp"

namespace bus {

struct recoverability_config;

// A user's replacement for the default decision (NServiceBus's custom
// recoverability policy). It may call default_policy() for the cases it
// does not change. decide() still refuses what cannot be carried out, and
// sends deserialization failures to the error queue before calling it.
using custom_policy =
    std::function<action(const recoverability_config&, const error_context&, random_source)>;

// What the endpoint and its transport can carry out. The default policy
// skips a tier that is not available (as NServiceBus sets its retry count
// to zero); decide() turns any action that still asks for it, e.g. from a
// custom policy, into a move to the error queue.
struct capabilities {
  bool immediate_retries = true; // off: e.g. the endpoint disabled in-process retries
  bool delayed_delivery = true;  // off: the transport cannot schedule a redelivery
  // The endpoint reads a stream (bus/stream.hpp): both of the above are
  // off, and a refusal says why in these words.
  bool reads_stream = false;
};

// Exception types that go to the error queue at once, whatever the rules
// say (NServiceBus's AddUnrecoverableException). A type covers its
// subtypes. message_deserialization_error is always unrecoverable, declared
// or not.
class unrecoverable_exceptions {
public:
  template <class E> unrecoverable_exceptions& add() {
    types_.push_back(detail::exception_type::of<E>());
    return *this;
  }

  // The first declared type that catches `exception`, if any.
  [[nodiscard]] const detail::exception_type*
  find(const caught_exception& thrown) const noexcept;
  // The same, looking into `exception` first (one rethrow).
  [[nodiscard]] const detail::exception_type*
  find(const std::exception_ptr& exception) const noexcept;

  [[nodiscard]] const std::vector<detail::exception_type>& types() const noexcept { return types_; }

private:
  std::vector<detail::exception_type> types_;
};

inline constexpr duration default_max_retry_time = std::chrono::hours(24);

struct recoverability_options {
  // Where move_to_error sends the message; empty: the endpoint's
  // <queue>_error.
  std::string error_queue;
  // Retrying stops this long after the first failure (a rule's max_time
  // overrides it).
  duration max_retry_time = default_max_retry_time;
  capabilities available;
  unrecoverable_exceptions unrecoverable;
  // Empty: default_policy() decides.
  custom_policy custom;
  // Retries bounded as a share of first attempts (none: unbounded). The
  // runtime keeps the budget and asks it; decide() never does.
  std::optional<retry_budget_settings> retry_budget;
  // What becomes of a message found expired before an attempt.
  expired_action expired_messages = expired_action::discard;
};

struct recoverability_config {
  rule_set rules;
  // The scope the rules came from; empty when no scope defines rules.
  std::optional<scope_level> scope;
  recoverability_options options;
};

// The configuration of one consumer: its scopes resolved, the options
// attached, everything validated. Fails with errc::invalid_configuration
// and one message that lists every mistake in every scope (not only the
// scope that wins), each naming its scope and rule. The runtime calls it
// when the bus is built, so a bad policy never reaches a message.
[[nodiscard]] result<recoverability_config>
make_recoverability_config(const recoverability_scopes& scopes,
                           recoverability_options options = {});

// How long after its first failure a message may still be retried under
// `config`: its max_retry_time, or the longest max_time of a rule. decide()
// schedules no retry past that limit, so an outbox's inbox that remembers
// handled messages at least this long sees every retry of them (issue 21).
// A custom policy's own limits are beyond the bus's sight: it counts as
// max_retry_time.
[[nodiscard]] duration longest_retry_time(const recoverability_config& config) noexcept;

} // namespace bus
