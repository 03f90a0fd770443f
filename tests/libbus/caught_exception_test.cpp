// A caught_exception answers "is it an E?" as a catch clause would, for
// every kind of thrown type, while rethrowing only once (see
// tests/libbus/policy/decide_cost_test.cpp for the count).
#include "bus/caught_exception.hpp"

#include <catch2/catch.hpp>

#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include "bus/exception_info.hpp"

namespace caught_exception_test {

struct base_error : std::runtime_error {
  base_error() : std::runtime_error("base") {}
};
struct derived_error : base_error {};
struct unrelated_error : std::logic_error {
  unrelated_error() : std::logic_error("unrelated") {}
};
// A mix-in that is not a std::exception, polymorphic or not.
struct tagged {
  int tag = 7;
};
struct polymorphic_tag {
  virtual ~polymorphic_tag() = default;
};
struct tagged_error : std::runtime_error, tagged, polymorphic_tag {
  tagged_error() : std::runtime_error("tagged") {}
};
// std::exception twice: `catch (const std::exception&)` cannot catch it.
struct twice_error : std::runtime_error, std::logic_error {
  twice_error() : std::runtime_error("one"), std::logic_error("two") {}
};
// A base the thrown type hides: catch clauses do not see it.
struct hidden_base_error : std::runtime_error, private tagged {
  hidden_base_error() : std::runtime_error("hidden") {}
};
// Not a std::exception at all.
struct plain {
  int code = 3;
};
struct plain_derived : plain {};
enum class status { failed };

// What a catch clause says, the reference every answer is held to.
template <class E> bool caught_as(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

// is<E>() against a catch clause, for each E, for one thrown object.
template <class... E> void check_against_catch(const std::exception_ptr& e) {
  const bus::caught_exception thrown(e);
  (
      [&] {
        INFO("as " << typeid(E).name());
        CHECK(thrown.is<E>() == caught_as<E>(e));
      }(),
      ...);
}

} // namespace caught_exception_test

using namespace caught_exception_test;

TEST_CASE("a caught exception is an E exactly when a catch clause for E catches it") {
  const std::exception_ptr thrown[] = {
      std::make_exception_ptr(base_error{}),      std::make_exception_ptr(derived_error{}),
      std::make_exception_ptr(unrelated_error{}), std::make_exception_ptr(tagged_error{}),
      std::make_exception_ptr(twice_error{}),     std::make_exception_ptr(hidden_base_error{}),
      std::make_exception_ptr(plain{}),           std::make_exception_ptr(plain_derived{}),
      std::make_exception_ptr(42),                std::make_exception_ptr(status::failed),
      std::make_exception_ptr(std::string("text")),
      std::make_exception_ptr(std::system_error(std::make_error_code(std::errc::io_error))),
  };
  for (const auto& e : thrown) {
    INFO(bus::describe(e).type);
    check_against_catch<std::exception, std::runtime_error, std::logic_error, base_error,
                        derived_error, unrelated_error, tagged, polymorphic_tag, tagged_error,
                        twice_error, hidden_base_error, plain, plain_derived, int, long, status,
                        std::string, std::system_error>(e);
  }
}

TEST_CASE("a caught exception keeps the std::exception it saw, or none") {
  CHECK(bus::caught_exception(std::make_exception_ptr(derived_error{})).std_exception() != nullptr);
  CHECK(bus::caught_exception(std::make_exception_ptr(42)).std_exception() == nullptr);
  CHECK(bus::caught_exception(std::make_exception_ptr(twice_error{})).std_exception() == nullptr);
  const bus::caught_exception nothing;
  CHECK_FALSE(nothing);
  CHECK_FALSE(nothing.is<std::exception>());
  CHECK(nothing.type() == nullptr);
  CHECK(nothing.type_name() == "no exception");
}

TEST_CASE("a caught exception names its type and message as describe() does") {
  const std::exception_ptr thrown[] = {
      std::make_exception_ptr(derived_error{}), std::make_exception_ptr(tagged_error{}),
      std::make_exception_ptr(twice_error{}),   std::make_exception_ptr(plain{}),
      std::make_exception_ptr(42),              nullptr,
  };
  for (const auto& e : thrown) {
    const bus::caught_exception caught(e);
    const auto described = bus::describe(e);
    CHECK(caught.describe().type == described.type);
    CHECK(caught.describe().message == described.message);
  }
  const bus::caught_exception derived(std::make_exception_ptr(derived_error{}));
  CHECK(derived.type_name() == "caught_exception_test::derived_error");
  CHECK(derived.message() == "base");
  CHECK(derived.describe().type == "caught_exception_test::derived_error");
  const bus::caught_exception number(std::make_exception_ptr(42));
  CHECK(number.type_name() == "int");
  CHECK(number.message().empty());
  CHECK(number.describe().message == "an exception of type int (not derived from std::exception)");
}

TEST_CASE("a caught exception hands the typed object to a visitor, whatever it derives from") {
  const bus::caught_exception tagged_one(std::make_exception_ptr(tagged_error{}));
  CHECK(tagged_one.visit_as<tagged>([](const tagged& t) { return t.tag; }) == 7);
  CHECK(tagged_one.visit_as<std::runtime_error>([](const std::runtime_error& e) {
    return std::string(e.what());
  }) == "tagged");
  CHECK_FALSE(tagged_one.visit_as<plain>([](const plain& p) { return p.code; }));
  const bus::caught_exception plain_one(std::make_exception_ptr(plain_derived{}));
  CHECK(plain_one.visit_as<plain>([](const plain& p) { return p.code; }) == 3);
  CHECK_FALSE(plain_one.visit_as<std::exception>([](const std::exception&) { return 1; }));
}

TEST_CASE("what a visitor throws reaches the caller") {
  const auto thrower = [](const auto&) -> int { throw std::domain_error("from the visitor"); };
  const bus::caught_exception standard(std::make_exception_ptr(base_error{}));
  CHECK_THROWS_AS(standard.visit_as<std::exception>(thrower), std::domain_error);
  const bus::caught_exception not_standard(std::make_exception_ptr(plain{}));
  CHECK_THROWS_AS(not_standard.visit_as<plain>(thrower), std::domain_error);
}
