// What the failure path costs: decide() looks into the thrown exception
// once, however many rules it tests, instead of rethrowing it per rule
// (issue 12, point 5).
//
// Counted where every throw and every std::rethrow_exception passes on the
// Itanium C++ ABI (GCC and Clang on Linux): _Unwind_RaiseException. This
// file defines it, counts the call and forwards to the real one, so the
// count covers the library's code as compiled, hidden helpers included. A
// control checks that the hook sees a plain `throw` before any count is
// trusted, so a platform where the interposition does not take cannot pass
// the checks by counting nothing.
#include "bus/policy/decide.hpp"

#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <unwind.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "bus/caught_exception.hpp"
#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

namespace {

std::atomic<long> raises{0};

} // namespace

extern "C" _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception* exception) {
  using raise_fn = _Unwind_Reason_Code (*)(struct _Unwind_Exception*);
  static const auto next = reinterpret_cast<raise_fn>(dlsym(RTLD_NEXT, "_Unwind_RaiseException"));
  raises.fetch_add(1, std::memory_order_relaxed);
  return next(exception);
}

namespace decide_cost_test {

// Twelve unrelated exception types for rules that do not match.
template <int N> struct unrelated_error : std::runtime_error {
  unrelated_error() : std::runtime_error("unrelated " + std::to_string(N)) {}
};

// A type none of the rules names, so that every typed rule is tested.
struct unforeseen_error : std::runtime_error {
  unforeseen_error() : std::runtime_error("unforeseen") {}
};

template <int... N> void add_unrelated_rules(bus::policy_builder& p, std::integer_sequence<int, N...>) {
  (p.on<unrelated_error<N>>().dead_letter(), ...);
}

} // namespace decide_cost_test

using namespace decide_cost_test;
using namespace bus::test;

namespace {

// Raises (throws and rethrows) made while `f` runs.
template <class F> long raises_during(F&& f) {
  const long before = raises.load();
  std::forward<F>(f)();
  return raises.load() - before;
}

// Twelve rules that do not match, the sample hierarchy's three levels with
// a predicate on the middle one, and the catch-all.
bus::recoverability_config many_rules(bus::recoverability_options options = {}) {
  return config_of(
      [](bus::policy_builder& p) {
        add_unrelated_rules(p, std::make_integer_sequence<int, 12>{});
        p.on<transport_error>().retry(2).then_redeliver();
        p.on<http_error>([](const http_error& e) { return e.status == 503; }).redeliver();
        p.on<http_error>().retry(1);
        p.on<too_many_requests>().retry(3);
        p.on_any().retry(1).then_redeliver();
      },
      std::move(options));
}

bus::error_context context_of(std::exception_ptr exception) {
  bus::error_context context;
  context.exception = std::move(exception);
  return context;
}

} // namespace

TEST_CASE("the raise counter sees a plain throw, so its counts can be trusted") {
  const long n = raises_during([] {
    try {
      throw 42;
    } catch (...) {
    }
  });
  REQUIRE(n == 1);
}

TEST_CASE("decide() looks into an exception derived from std::exception once, whatever the number "
          "of rules") {
  const auto config = many_rules();
  fixed_draw rng;
  struct row {
    const char* what;
    std::exception_ptr exception;
    std::string expected;
  };
  const row table[] = {
      {"no rule names it: every typed rule tested, the catch-all decides",
       std::make_exception_ptr(unforeseen_error{}), "retry 200ms"},
      {"the base of the hierarchy", std::make_exception_ptr(transport_error{}), "retry 200ms"},
      {"the middle, its predicate declines", std::make_exception_ptr(http_error{500}),
       "retry 200ms"},
      {"the middle, its predicate holds", std::make_exception_ptr(http_error{503}),
       "redeliver 5min"},
      {"the most specific of three registered types",
       std::make_exception_ptr(too_many_requests{}), "retry 200ms"},
  };
  for (const auto& r : table) {
    INFO(r.what);
    const auto context = context_of(r.exception);
    bus::action decided;
    const long n = raises_during([&] { decided = bus::decide(config, context, rng); });
    CHECK(summary(decided) == r.expected);
    CHECK(n <= 1);
  }
}

TEST_CASE("decide() makes no raise at all with an exception the runtime has classified") {
  const auto config = many_rules();
  fixed_draw rng;
  const bus::caught_exception thrown(std::make_exception_ptr(too_many_requests{}));
  const auto context = bus::error_context_for(thrown);
  bus::action decided;
  const long n = raises_during([&] { decided = bus::decide(config, context, rng); });
  CHECK(summary(decided) == "retry 200ms");
  CHECK(n == 0);
}

TEST_CASE("a custom policy sees the look decide() took, and default_policy() called from it takes "
          "no other") {
  bus::recoverability_options options;
  options.custom = [](const bus::recoverability_config& config, const bus::error_context& context,
                      bus::random_source rng) -> bus::action {
    REQUIRE(context.caught != nullptr);
    if (context.caught->is<validation_error>())
      return bus::move_to_error{"invalid", "invalid_messages"};
    return bus::default_policy(config, context, rng);
  };
  const auto config = many_rules(std::move(options));
  fixed_draw rng;
  const auto context = context_of(std::make_exception_ptr(too_many_requests{}));
  bus::action decided;
  CHECK(raises_during([&] { decided = bus::decide(config, context, rng); }) <= 1);
  CHECK(summary(decided) == "retry 200ms");
  const bus::caught_exception invalid(std::make_exception_ptr(validation_error{}));
  const auto classified = bus::error_context_for(invalid);
  CHECK(raises_during([&] { decided = bus::decide(config, classified, rng); }) == 0);
  CHECK(summary(decided) == "error");
}

TEST_CASE("classifying an exception raises once, and what the runtime then asks of it raises no "
          "more") {
  const auto error = std::make_exception_ptr(too_many_requests{});
  std::optional<bus::caught_exception> thrown;
  CHECK(raises_during([&] { thrown.emplace(error); }) == 1);
  CHECK(raises_during([&] {
          CHECK(thrown->is<http_error>());
          CHECK_FALSE(thrown->is<validation_error>());
          CHECK(thrown->describe().type == "bus::test::too_many_requests");
          CHECK(thrown->describe().message == "http 429");
        })
        == 0);
}

TEST_CASE("an exception looked into by the clause that caught it costs its throw and no rethrow") {
  // What the consumer does with a handler's exception (invoke() in
  // actors/src/delivery_steps.cpp).
  std::optional<bus::caught_exception> thrown;
  const std::exception* seen = nullptr;
  CHECK(raises_during([&] {
          try {
            throw too_many_requests{};
          } catch (const std::exception& e) {
            seen = &e;
            thrown = bus::caught_exception::handled(e);
          }
        })
        == 1); // the throw
  REQUIRE(thrown.has_value());
  REQUIRE(*thrown);
  // What handled() relies on: the pointer it keeps refers to the object the
  // clause caught, not to a copy, so that object lives as long as it does.
  CHECK(thrown->std_exception() == seen);
  try {
    std::rethrow_exception(thrown->pointer());
  } catch (const std::exception& again) {
    CHECK(&again == seen);
  }
  const auto config = many_rules();
  fixed_draw rng;
  bus::action decided;
  CHECK(raises_during([&] {
          CHECK(thrown->is<http_error>());
          CHECK(thrown->describe().type == "bus::test::too_many_requests");
          CHECK(thrown->describe().message == "http 429");
          decided = bus::decide(config, bus::error_context_for(*thrown), rng);
        })
        == 0);
  CHECK(summary(decided) == "retry 200ms");
}

TEST_CASE("an exception not derived from std::exception is still matched exactly, by rethrowing") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on<retryable>().retry(1);
    p.on<legacy_failure>([](const legacy_failure& f) { return f.code == 7; }).redeliver();
    p.on<int>().dead_letter();
  });
  fixed_draw rng;
  CHECK(summary(bus::decide(config, context_of(std::make_exception_ptr(audited_timeout{})), rng))
        == "retry 200ms");
  CHECK(summary(bus::decide(config, context_of(std::make_exception_ptr(legacy_failure{7})), rng))
        == "redeliver 5min");
  CHECK(summary(bus::decide(config, context_of(std::make_exception_ptr(legacy_failure{8})), rng))
        == "error");
  CHECK(summary(bus::decide(config, context_of(std::make_exception_ptr(42)), rng)) == "error");
}
