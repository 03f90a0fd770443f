// A scenario as read from its file: plain data, validated, with every name
// resolved to something that exists (docs/scenarios.md describes the format).
// Building a bus from it is topology.hpp's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/dependency_breaker.hpp"
#include "bus/policy/backoff.hpp"
#include "bus/policy/deadline.hpp"
#include "bus/policy/retry_budget.hpp"
#include "exception_types.hpp"
#include "json_reader.hpp"

namespace bus::scenario {

// A condition on the fields of an exception: a tree of comparisons.
struct predicate {
  enum class op { equals, not_equals, in, contains, all, any, negate };
  op kind = op::equals;
  std::string field;                // equals, not_equals, in, contains
  std::vector<field_value> values;  // one, except for `in`
  std::vector<predicate> operands;  // all, any, negate (one)
};

// The settings of one tier, retry or redelivery, as written; which DSL call
// they become is decided in apply_policy.cpp.
struct tier_spec {
  std::optional<int> count;
  std::optional<duration> delay;
  std::optional<bus::backoff> backoff;
  std::optional<std::vector<duration>> intervals;
  std::optional<std::string> delay_from; // a duration field of the exception
  std::optional<bool> jitter;
  std::optional<duration> max_delay;
};

enum class terminal { dead_letter, discard };

struct rule_spec {
  std::string on; // an exception type, or "any" for on_any()
  std::optional<predicate> when;
  std::optional<int> max_attempts;
  std::optional<duration> max_time;
  std::optional<tier_spec> retry;
  std::optional<tier_spec> redeliver;
  std::optional<terminal> action; // dead_letter() or discard(): the whole chain
  bool then_dead_letter = false;  // "then": "dead_letter" after retry or redeliver
  std::vector<std::string> trips; // "trips": the dependency breakers it counts against
};

// The rules of one scope.
struct policy_spec {
  // The parameterless add_resilience() first: on_any().retry().then_redeliver().
  bool defaults = false;
  std::vector<rule_spec> rules;
};

// What one attempt of the handler does.
struct step {
  enum class kind { succeed, die, raise, poison };
  kind what = kind::succeed;
  std::string exception; // raise: the type
  std::string message;   // raise: what(); poison: the reason
  field_values fields;   // raise
  int times = 1;
  // How long the attempt takes before it does `what`, on the scenario's
  // clock (virtual or wall). Zero: at once. A script with a step that takes
  // time is served by an actor, which answers when the time is up.
  duration takes{};

  [[nodiscard]] static step of(kind k) {
    step s;
    s.what = k;
    return s;
  }
};

// While [from, until) on the scenario's clock every attempt fails with this.
struct outage {
  duration from{};
  duration until{};
  std::string exception;
  std::string message;
  field_values fields;
};

// A message a handler sends on every attempt ("sends"), before the step
// decides how the attempt ends: a failed attempt's sends are dropped, a
// successful one's go out (after the commit, on an endpoint with an
// outbox). The message is named after the one handled: onward_name().
struct onward_send {
  std::string type;
  std::size_t message_slot = 0;
  std::string to; // an endpoint of the scenario
};

// How the output names what the handler of `handled` sends of `type`:
// "order-1/invoice_created". Scenario messages may not contain '/', so the
// two never meet.
[[nodiscard]] inline std::string onward_name(const std::string& handled, const std::string& type) {
  return handled + "/" + type;
}

struct handler_spec {
  std::string message_type;
  std::size_t message_slot = 0; // the index of message_type in scenario::message_types
  std::optional<policy_spec> policy;
  std::vector<step> script;     // never empty: ["succeed"] by default
  std::vector<outage> outages;
  std::vector<onward_send> sends;
  // Whether the handler is served by an actor (the bus's way of letting a
  // consumer die mid-message, or of answering later) rather than a
  // function: set when its own script or that of a message sent to it has a
  // "die" step or a step that takes time.
  bool by_actor = false;
  // How long the consumer waits for an actor-served handler; an attempt
  // that takes longer fails (handle_with_actor's timeout).
  std::optional<duration> timeout;
};

// Whether a script needs an actor: a "die" step, or a step that takes time.
[[nodiscard]] bool needs_actor(const std::vector<step>& script);

// "outbox": the endpoint's outbox and inbox, on SQLite.
struct outbox_spec {
  // {"sqlite": "<file>"}: that file, kept after the run. Empty for
  // "sqlite": a throwaway file in the run's temporary directory.
  std::string sqlite_file;
};

struct rate_limit_spec {
  int consecutive_failures = 0;
  duration wait{};
};

struct endpoint_spec {
  std::string name;
  std::size_t slots = 1;
  std::optional<std::string> error_queue;
  std::optional<policy_spec> policy;
  std::vector<std::string> unrecoverable;
  std::optional<bool> immediate_retries;
  bool discard_faulted_messages = false;
  std::optional<rate_limit_spec> rate_limit;
  std::vector<handler_spec> handlers;
  std::vector<std::string> depends_on; // dependency breakers it pauses for
  // Issue 14: "retry_budget", "expired_messages", "inherit_deadline".
  std::optional<retry_budget_settings> retry_budget;
  std::optional<expired_action> expired_messages;
  bool inherit_deadline = false;
  std::optional<outbox_spec> outbox;
};

// A dependency breaker declared in "bus": {"dependencies": {name: settings}}.
struct dependency_spec {
  std::string name;
  dependency_breaker_settings settings;
};

struct bus_spec {
  std::optional<policy_spec> policy; // the bus scope
  std::optional<policy_spec> host_policy;
  std::optional<policy_spec> transport_policy;
  std::vector<std::string> unrecoverable;
  std::optional<duration> max_retry_time;
  std::optional<std::uint64_t> jitter_seed;
  std::vector<dependency_spec> dependencies;
  // Issue 14: every endpoint's default budget and expired-message action.
  std::optional<retry_budget_settings> retry_budget;
  std::optional<expired_action> expired_messages;
};

// One message to send; a "count" in the file becomes several of these.
struct send_spec {
  std::string name; // unique in the scenario: how the output names the message
  std::string type;
  std::size_t message_slot = 0;
  std::string to;
  duration at{};
  // The message's own script, instead of its handler's.
  std::optional<std::vector<step>> script;
  std::string script_path; // where the file wrote it, for later checks
  // The text the message carries on the wire instead of its JSON: a body
  // that does not decode as the message type.
  std::optional<std::string> malformed_body;
  // Issue 14: the message expires this long after it is sent.
  std::optional<duration> time_to_live;
  // How many times it is sent with one message id: a broker delivering
  // again a message whose acknowledgement was lost (2: one duplicate).
  int copies = 1;
};

// What a fault<T> raised for a message must say ("expect": {"faults": ...}).
// Fields left empty are not checked.
struct fault_expectation {
  std::string message;    // the scenario's name for the message
  std::string path;       // "expect.faults.<message>", for reports
  bool raised = true;     // false: no fault<T> may be raised for it
  std::optional<std::string> exception; // the scenario's name of the type
  std::optional<std::string> exception_message;
  std::optional<std::string> reason_contains;
  std::optional<std::string> endpoint;
  std::optional<int> immediate_retries;
  std::optional<int> delivery_count;
};

// At most this many message types per scenario: each needs a C++ type of
// its own (scenario_messages.hpp).
inline constexpr std::size_t max_message_types = 8;

struct scenario {
  std::string description;
  std::vector<std::string> message_types;
  bus_spec bus;
  std::vector<endpoint_spec> endpoints;
  std::vector<send_spec> sends; // in the order of their time, then of the file
  std::vector<fault_expectation> expected_faults; // in the order of the file
};

// Reads and checks a scenario; every mistake goes to `d` with its path, and
// then there is no scenario. Mistakes the bus itself checks (a rule without
// an action, a maximum delay below the base delay) are left to it, so that
// they are reported in its own words when the bus is built.
[[nodiscard]] std::optional<scenario> parse_scenario(const nlohmann::json& document,
                                                     diagnostics& d);

// Parts of the parser, in their own files.
[[nodiscard]] std::optional<policy_spec> parse_policy(const node& n);
[[nodiscard]] std::optional<step> parse_step(const node& n);
[[nodiscard]] std::optional<outage> parse_outage(const node& n);
// "inventory-db" or ["inventory-db", ...]: names of dependency breakers.
[[nodiscard]] std::optional<std::vector<std::string>> parse_dependency_names(const node& n);
// {"inventory-db": {"consecutive_failures": 5, ...}, ...}.
[[nodiscard]] std::optional<std::vector<dependency_spec>> parse_dependencies(const node& n);
// {"name", "ratio", "window", "min_retries_per_second", "fallback"}, each
// optional ({} is Finagle's defaults); a mistake names its field.
[[nodiscard]] std::optional<retry_budget_settings> parse_retry_budget(const node& n);
// "discard" or "dead_letter".
[[nodiscard]] std::optional<expired_action> parse_expired_action(const node& n);

} // namespace bus::scenario
