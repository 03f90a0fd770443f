#include "bus/policy/scopes.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace bus::test;
using bus::scope_level;

namespace {

// A scope's rules, recognisable by their retry count.
void retries(bus::recoverability_scopes& scopes, scope_level scope, int count) {
  scopes.add_resilience(scope, [count](bus::policy_builder& p) { p.on_any().retry(count); });
}

std::vector<std::string> described(const bus::rule_set& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules.rules())
    out.push_back(bus::describe(r));
  return out;
}

} // namespace

TEST_CASE("the most specific scope that defines rules wins") {
  struct row {
    std::vector<scope_level> defined;
    std::optional<scope_level> winner;
  };
  const std::vector<row> table = {
      {{}, std::nullopt},
      {{scope_level::host}, scope_level::host},
      {{scope_level::host, scope_level::bus}, scope_level::bus},
      {{scope_level::bus, scope_level::transport}, scope_level::transport},
      {{scope_level::host, scope_level::bus, scope_level::transport, scope_level::endpoint},
       scope_level::endpoint},
      {{scope_level::host, scope_level::bus, scope_level::transport, scope_level::endpoint,
        scope_level::consumer},
       scope_level::consumer},
      {{scope_level::consumer, scope_level::host}, scope_level::consumer},
  };
  for (const auto& r : table) {
    bus::recoverability_scopes scopes;
    for (const auto scope : r.defined)
      retries(scopes, scope, 1 + static_cast<int>(scope));
    const auto resolved = scopes.resolve();
    CAPTURE(r.defined.size());
    CHECK(resolved.scope == r.winner);
    if (r.winner) {
      REQUIRE(resolved.rules.rules().size() == 1);
      CHECK(bus::describe(resolved.rules.rules()[0])
            == "on_any().retry(" + std::to_string(1 + static_cast<int>(*r.winner)) + ")");
    } else {
      CHECK(resolved.rules.empty());
    }
  }
}

TEST_CASE("the winning scope replaces the others as a whole, nothing is merged") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(scope_level::bus, [](bus::policy_builder& p) {
    p.on<validation_error>().dead_letter();
    p.on_any().retry().then_redeliver();
  });
  scopes.add_resilience(scope_level::consumer, [](bus::policy_builder& p) {
    p.on_any().retry(5, std::chrono::milliseconds(500));
  });
  const auto resolved = scopes.resolve();
  CHECK(resolved.scope == scope_level::consumer);
  CHECK(described(resolved.rules) == std::vector<std::string>{"on_any().retry(5, 500ms)"});
}

TEST_CASE("a scope defined with no rules still wins and sends everything to the error queue") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(scope_level::bus);
  scopes.add_resilience(scope_level::transport, [](bus::policy_builder&) {});
  const auto resolved = scopes.resolve();
  CHECK(resolved.scope == scope_level::transport);
  CHECK(resolved.rules.empty());
}

TEST_CASE("add_resilience calls on one scope accumulate, last write wins") {
  bus::recoverability_scopes scopes;
  scopes.add_resilience(scope_level::bus);
  scopes.add_resilience(scope_level::bus, [](bus::policy_builder& p) { p.on_any().retry(5); });
  CHECK(described(*scopes.find(scope_level::bus)) == std::vector<std::string>{"on_any().retry(5)"});
}

TEST_CASE("a shared rule set can be assigned to a scope wholesale") {
  bus::rule_set shared;
  shared.add_resilience();
  bus::recoverability_scopes scopes;
  scopes.assign(scope_level::transport, shared);
  CHECK(scopes.find(scope_level::host) == nullptr);
  REQUIRE(scopes.find(scope_level::transport) != nullptr);
  CHECK(described(*scopes.find(scope_level::transport)) == described(shared));
}

TEST_CASE("scopes print their names") {
  CHECK(bus::to_string(scope_level::host) == "host");
  CHECK(bus::to_string(scope_level::bus) == "bus");
  CHECK(bus::to_string(scope_level::transport) == "transport");
  CHECK(bus::to_string(scope_level::endpoint) == "endpoint");
  CHECK(bus::to_string(scope_level::consumer) == "consumer");
}
