// Scaffolding shared by the recoverability policy tests
// (tests/libbus/policy/*_test.cpp): a fixed random generator, helpers that
// build rule sets and configurations from a DSL callback, a one-word summary
// of an action, and the sample exception hierarchy the rules match.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include <catch2/catch.hpp>

#include "bus/policy/action.hpp"
#include "bus/policy/config.hpp"
#include "bus/policy/resilience.hpp"
#include "bus/policy/schedule.hpp"
#include "bus/time.hpp"

namespace bus::test {

// The policy tests' "now": a whole second, far from the epoch.
inline const time_point t0 = from_unix_ms(1'800'000'000'000);

// Draws that pin a jitter range: 0 its bottom, 2^63 its middle (the jittered
// delay equals the nominal one), 2^64 - 1 its top.
inline constexpr std::uint64_t lowest = 0;
inline constexpr std::uint64_t middle = std::uint64_t{1} << 63;
inline constexpr std::uint64_t highest = std::numeric_limits<std::uint64_t>::max();

// A random generator that returns `value` on every draw (the middle unless
// told otherwise) and counts its draws.
struct fixed_draw {
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type value = middle;
  int draws = 0;
  result_type operator()() {
    ++draws;
    return value;
  }
};

// The callback of add_resilience(), kept in tables of configurations.
using configure_fn = std::function<void(bus::policy_builder&)>;

// The rule set that `configure` builds.
inline bus::rule_set rules_of(const configure_fn& configure) {
  bus::rule_set rules;
  rules.add_resilience(configure);
  return rules;
}

// A valid configuration whose only rules are `configure`'s, at `scope`.
inline bus::recoverability_config config_of(bus::scope_level scope, const configure_fn& configure,
                                            bus::recoverability_options options = {}) {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(scope, configure);
  auto config = bus::make_recoverability_config(scopes, std::move(options));
  REQUIRE(config.has_value());
  return std::move(config).value();
}

// The same at the bus scope.
inline bus::recoverability_config config_of(const configure_fn& configure,
                                            bus::recoverability_options options = {}) {
  return config_of(bus::scope_level::bus, configure, std::move(options));
}

// An action without its reason, for tables of sequences: "retry 200ms",
// "redeliver 5min", "error", "discard".
inline std::string summary(const bus::action& a) {
  struct summary_of {
    std::string operator()(const bus::immediate_retry& r) const {
      return "retry " + bus::to_short_string(r.delay);
    }
    std::string operator()(const bus::delayed_retry& r) const {
      return "redeliver " + bus::to_short_string(r.delay);
    }
    std::string operator()(const bus::move_to_error&) const { return "error"; }
    std::string operator()(const bus::discard&) const { return "discard"; }
  };
  return std::visit(summary_of{}, a);
}

} // namespace bus::test

// The sample exception hierarchy that the policy tests share:
//  - transport_error <- http_error <- too_many_requests: three levels, as an
//    HTTP client library would have them, for the most-specific-type tests.
//    http_error carries the status (500 by default) and a Retry-After delay;
//    its what() is "http <status>". too_many_requests is a 429.
//  - validation_error: a failure that retrying cannot fix.
//  - argument_error <- argument_null_error: a std::invalid_argument naming
//    its parameter (what() "bad <param>", "bad argument" by default).
//  - legacy_failure: not derived from std::exception, with a code.
//  - retryable, auditable <- audited_timeout: two unrelated bases, neither
//    more specific than the other.
namespace bus::test {

struct transport_error : std::runtime_error {
  explicit transport_error(const std::string& what = "transport") : std::runtime_error(what) {}
};
struct http_error : transport_error {
  explicit http_error(int status = 500,
                      std::chrono::seconds retry_after = std::chrono::seconds::zero())
      : transport_error("http " + std::to_string(status)), status(status),
        retry_after(retry_after) {}
  int status;
  std::chrono::seconds retry_after;
};
struct too_many_requests : http_error {
  too_many_requests() : http_error(429) {}
};
struct validation_error : std::runtime_error {
  validation_error() : std::runtime_error("invalid") {}
};
struct argument_error : std::invalid_argument {
  explicit argument_error(std::string param = "argument")
      : std::invalid_argument("bad " + param), param_name(std::move(param)) {}
  std::string param_name;
};
struct argument_null_error : argument_error {
  using argument_error::argument_error;
};
struct legacy_failure {
  int code = 0;
};
struct retryable {};
struct auditable {};
struct audited_timeout : retryable, auditable {};

} // namespace bus::test
