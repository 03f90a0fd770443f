#include "bus/policy/exception_type.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/policy_support.hpp"

namespace exception_type_test {

// transport_error <- http_error <- too_many_requests, legacy_failure (not a
// std::exception) and retryable, auditable <- audited_timeout among others.

// An abstract base: no object of it can be made, the rule still works.
struct abstract_error {
  virtual ~abstract_error() = default;
  virtual int severity() const = 0;
};
struct concrete_error : abstract_error {
  int severity() const override { return 1; }
};

} // namespace exception_type_test

using namespace exception_type_test;
using namespace bus::test;
using bus::detail::exception_type;

TEST_CASE("an exception type catches itself and its subtypes, never its bases") {
  const auto http = exception_type::of<http_error>();
  CHECK(http.catches(std::make_exception_ptr(http_error{})));
  CHECK(http.catches(std::make_exception_ptr(too_many_requests{})));
  CHECK_FALSE(http.catches(std::make_exception_ptr(transport_error{})));
  CHECK_FALSE(http.catches(std::make_exception_ptr(std::runtime_error("other"))));
  CHECK_FALSE(http.catches(nullptr));
}

TEST_CASE("an exception type ranks types by inheritance without an object of either") {
  struct row {
    exception_type type;
    exception_type base;
    bool derived;
  };
  const auto transport = exception_type::of<transport_error>();
  const auto http = exception_type::of<http_error>();
  const auto throttled = exception_type::of<too_many_requests>();
  const auto std_exception = exception_type::of<std::exception>();
  const std::vector<row> table = {
      {throttled, http, true},
      {throttled, transport, true},
      {http, transport, true},
      {http, http, true},
      {transport, http, false},
      {transport, throttled, false},
      {throttled, std_exception, true},
      {exception_type::of<concrete_error>(), exception_type::of<abstract_error>(), true},
      {exception_type::of<audited_timeout>(), exception_type::of<retryable>(), true},
      {exception_type::of<retryable>(), exception_type::of<auditable>(), false},
      {exception_type::of<int>(), exception_type::of<long>(), false},
  };
  for (const auto& r : table) {
    INFO(r.type.name() << " derived from " << r.base.name());
    CHECK(r.type.is_same_or_derived_from(r.base) == r.derived);
  }
}

TEST_CASE("an exception type matches what does not derive from std::exception") {
  CHECK(exception_type::of<int>().catches(std::make_exception_ptr(42)));
  CHECK_FALSE(exception_type::of<int>().catches(std::make_exception_ptr(42L)));
  CHECK(exception_type::of<legacy_failure>().catches(std::make_exception_ptr(legacy_failure{7})));
  CHECK_FALSE(
      exception_type::of<std::exception>().catches(std::make_exception_ptr(legacy_failure{})));
}

TEST_CASE("an exception type names its type readably") {
  CHECK(exception_type::of<http_error>().name() == "bus::test::http_error");
  CHECK(exception_type::of<int>().name() == "int");
  CHECK(exception_type::of<http_error>() == exception_type::of<http_error>());
  CHECK(exception_type::of<http_error>() != exception_type::of<transport_error>());
}

TEST_CASE("the thrown type is named as thrown, whatever it derives from") {
  CHECK(bus::detail::thrown_type_name(std::make_exception_ptr(too_many_requests{}))
        == "bus::test::too_many_requests");
  CHECK(bus::detail::thrown_type_name(std::make_exception_ptr(42)) == "int");
  CHECK(bus::detail::thrown_type_name(std::make_exception_ptr(legacy_failure{}))
        == "bus::test::legacy_failure");
  CHECK(bus::detail::thrown_type_name(nullptr) == "no exception");
  // Named again from the thread's cache, each still its own.
  CHECK(bus::detail::thrown_type_name(std::make_exception_ptr(42)) == "int");
  CHECK(bus::detail::thrown_type_name(std::make_exception_ptr(too_many_requests{}))
        == "bus::test::too_many_requests");
}

TEST_CASE("an exception's message is its what(), or empty for anything else") {
  CHECK(bus::detail::exception_message(std::make_exception_ptr(std::runtime_error("disk full")))
        == "disk full");
  CHECK(bus::detail::exception_message(std::make_exception_ptr(42)).empty());
  CHECK(bus::detail::exception_message(nullptr).empty());
}
