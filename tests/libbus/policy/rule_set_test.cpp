#include "bus/policy/rule_set.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

namespace rule_set_test {

// Unrelated to the HTTP hierarchy: no rule for a transport error catches it.
struct disk_full : std::runtime_error {
  disk_full() : std::runtime_error("disk full") {}
};

} // namespace rule_set_test

using namespace rule_set_test;
using namespace bus::test;

namespace {

// The DSL text of the rule that matches `exception`, or "no rule".
template <class E> std::string matched(const bus::rule_set& rules, E exception) {
  const auto m = rules.match(std::make_exception_ptr(exception));
  return m.rule ? bus::describe(rules.rules()[*m.rule]) : "no rule";
}

} // namespace

TEST_CASE("the most specific type wins whatever the registration order") {
  const configure_fn base_first = [](bus::policy_builder& p) {
    p.on<transport_error>().redeliver();
    p.on<http_error>().retry(2);
    p.on<too_many_requests>().dead_letter();
  };
  const configure_fn derived_first = [](bus::policy_builder& p) {
    p.on<too_many_requests>().dead_letter();
    p.on<http_error>().retry(2);
    p.on<transport_error>().redeliver();
  };
  for (const auto& configure : {base_first, derived_first}) {
    const auto rules = rules_of(configure);
    CHECK(matched(rules, too_many_requests{})
          == "on<bus::test::too_many_requests>().dead_letter()");
    CHECK(matched(rules, http_error{}) == "on<bus::test::http_error>().retry(2)");
    CHECK(matched(rules, transport_error{})
          == "on<bus::test::transport_error>().redeliver({5min, 15min, 30min})");
    CHECK(matched(rules, disk_full{}) == "no rule");
  }
}

TEST_CASE("a rule for a base type matches its subtypes when nothing more specific does") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on_any().discard();
    p.on<transport_error>().retry(1);
  });
  CHECK(matched(rules, too_many_requests{}) == "on<bus::test::transport_error>().retry(1)");
  CHECK(matched(rules, disk_full{}) == "on_any().discard()");
}

TEST_CASE("among rules for one type the first whose predicate holds wins, the rule without "
          "predicate is the fallback") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on<http_error>().retry(1); // the fallback, registered first on purpose
    p.on<http_error>([](const http_error& e) { return e.status == 503; }).retry(3).then_redeliver();
    p.on<http_error>([](const http_error& e) { return e.status == 400; }).dead_letter();
    p.on<http_error>([](const http_error& e) { return e.status >= 500; }).retry(9);
  });
  struct row {
    int status;
    const char* rule;
  };
  const std::vector<row> table = {
      {503,
       "on<bus::test::http_error>(predicate).retry(3).then_redeliver({5min, 15min, 30min})"},
      {400, "on<bus::test::http_error>(predicate).dead_letter()"},
      {500, "on<bus::test::http_error>(predicate).retry(9)"},
      {404, "on<bus::test::http_error>().retry(1)"},
  };
  for (const auto& r : table) {
    CAPTURE(r.status);
    CHECK(matched(rules, http_error{r.status}) == r.rule);
  }
}

TEST_CASE("a type whose predicates all decline passes the exception to a less specific type") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on<http_error>([](const http_error& e) { return e.status == 429; }).redeliver();
    p.on<transport_error>().retry(2);
  });
  CHECK(matched(rules, too_many_requests{})
        == "on<bus::test::http_error>(predicate).redeliver({5min, 15min, 30min})");
  CHECK(matched(rules, http_error{500}) == "on<bus::test::transport_error>().retry(2)");
}

TEST_CASE("a predicate that throws counts as not holding") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on<http_error>([](const http_error&) -> bool {
       throw std::logic_error("bug in predicate");
     }).dead_letter();
    p.on_any().retry(1);
  });
  const auto m = rules.match(std::make_exception_ptr(http_error{}));
  REQUIRE(m.rule == std::optional<std::size_t>(1));
  REQUIRE(m.candidates.size() == 2);
  CHECK(m.candidates[0].verdict == bus::match_verdict::predicate_threw);
  CHECK(m.candidates[1].verdict == bus::match_verdict::matched);
}

TEST_CASE(
    "a rule without predicate replaces the earlier one of its type, predicate rules accumulate") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on<http_error>().retry(1);
    p.on<http_error>([](const http_error& e) { return e.status == 429; }).redeliver();
    p.on_any().discard();
    p.on<http_error>([](const http_error& e) { return e.status == 429; }).dead_letter();
    p.on<http_error>().retry(2);
    p.on_any().retry(7);
  });
  REQUIRE(rules.rules().size() == 4);
  CHECK(bus::describe(rules.rules()[0])
        == "on<bus::test::http_error>(predicate).redeliver({5min, 15min, 30min})");
  CHECK(bus::describe(rules.rules()[1])
        == "on<bus::test::http_error>(predicate).dead_letter()");
  CHECK(bus::describe(rules.rules()[2]) == "on<bus::test::http_error>().retry(2)");
  CHECK(bus::describe(rules.rules()[3]) == "on_any().retry(7)");
  CHECK(matched(rules, http_error{500}) == "on<bus::test::http_error>().retry(2)");
  CHECK(matched(rules, disk_full{}) == "on_any().retry(7)");
}

TEST_CASE(
    "exceptions not derived from std::exception are matched by their type and by the catch-all") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on<int>().discard();
    p.on<legacy_failure>([](const legacy_failure& f) { return f.code == 7; }).dead_letter();
    p.on<std::exception>().retry(1);
    p.on_any().redeliver();
  });
  CHECK(matched(rules, 42) == "on<int>().discard()");
  CHECK(matched(rules, legacy_failure{7})
        == "on<bus::test::legacy_failure>(predicate).dead_letter()");
  CHECK(matched(rules, legacy_failure{8}) == "on_any().redeliver({5min, 15min, 30min})");
  CHECK(matched(rules, 4.2) == "on_any().redeliver({5min, 15min, 30min})");
  CHECK(matched(rules, disk_full{}) == "on<std::exception>().retry(1)");
}

TEST_CASE("unrelated base types of one exception are consulted in registration order") {
  const auto retryable_first = rules_of([](bus::policy_builder& p) {
    p.on<retryable>().retry(1);
    p.on<auditable>().dead_letter();
  });
  const auto auditable_first = rules_of([](bus::policy_builder& p) {
    p.on<auditable>().dead_letter();
    p.on<retryable>().retry(1);
  });
  CHECK(matched(retryable_first, audited_timeout{}) == "on<bus::test::retryable>().retry(1)");
  CHECK(matched(auditable_first, audited_timeout{})
        == "on<bus::test::auditable>().dead_letter()");
}

TEST_CASE("no rule matches an empty exception pointer") {
  const auto rules = rules_of([](bus::policy_builder& p) { p.on_any().retry(); });
  const auto m = rules.match(nullptr);
  CHECK_FALSE(m.rule);
  CHECK(m.candidates.empty());
}

TEST_CASE("the match lists every rule that caught the exception with its rank and verdict") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on_any().retry();                                                                // #1
    p.on<transport_error>().redeliver();                                               // #2
    p.on<too_many_requests>([](const too_many_requests&) { return false; }).discard(); // #3
    p.on<disk_full>().dead_letter();                                                   // #4
    p.on<http_error>().retry(2);                                                       // #5
  });
  const auto m = rules.match(std::make_exception_ptr(too_many_requests{}));
  REQUIRE(m.rule == std::optional<std::size_t>(4));
  struct row {
    std::size_t rule;
    int rank;
    bool exact;
    bus::match_verdict verdict;
  };
  const std::vector<row> expected = {
      {2, 0, true, bus::match_verdict::predicate_false},
      {4, 1, false, bus::match_verdict::matched},
      {1, 2, false, bus::match_verdict::not_consulted},
      {0, 3, false, bus::match_verdict::not_consulted},
  };
  REQUIRE(m.candidates.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(m.candidates[i].rule == expected[i].rule);
    CHECK(m.candidates[i].rank == expected[i].rank);
    CHECK(m.candidates[i].exact_type == expected[i].exact);
    CHECK(m.candidates[i].verdict == expected[i].verdict);
  }
}

TEST_CASE("rules are named by position and target") {
  const auto rules = rules_of([](bus::policy_builder& p) {
    p.on_any().retry();
    p.on<http_error>([](const http_error&) { return true; }).discard();
  });
  CHECK(rules.name_of(0) == "rule #1 on_any()");
  CHECK(rules.name_of(1) == "rule #2 on<bus::test::http_error>(predicate)");
}
