// How a rule recognises an exception type and ranks two types by
// specificity, with nothing but catch clauses: exact for any C++ type,
// including those that do not derive from std::exception.
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <typeindex>
#include <typeinfo>

#include "bus/caught_exception.hpp"

namespace bus::detail {

// The readable name of a type ("bus::message_deserialization_error", "int").
[[nodiscard]] std::string type_name(const std::type_info& info);

// The type of the object `exception` holds as it was thrown ("int" for
// `throw 42`); "no exception" for an empty pointer, "unknown" where the ABI
// cannot tell. For logs and explain(), never for matching.
[[nodiscard]] std::string thrown_type_name(const std::exception_ptr& exception);

// The type_info of the object `exception` holds as thrown, or nullptr where
// the ABI cannot tell or the pointer is empty.
[[nodiscard]] const std::type_info* thrown_type(const std::exception_ptr& exception) noexcept;

// what() of a std::exception, or "" for anything else.
[[nodiscard]] std::string exception_message(const std::exception_ptr& exception);

// A C++ type that rules match exceptions against, type-erased.
//
// C++ has no portable way to ask at run time whether type D derives from
// type B, but the exception machinery answers exactly that question:
//
//  - "is this exception a B?": rethrow the exception_ptr and `catch (const
//    B&)`. It follows public, unambiguous inheritance exactly as the user's
//    own catch blocks do, and works for `int` or any struct as well as for
//    std::exception's family.
//  - "is every D a B?" (to rank two rules, the most specific type winning):
//    `throw static_cast<D*>(nullptr)` and `catch (B*)`. A handler of pointer
//    type catches a thrown pointer that a standard pointer conversion,
//    derived-to-base included, converts to it ([except.handle]), so no
//    object of D is ever needed: D may be abstract or have no default
//    constructor.
//
// Nothing walks type_info hierarchies (ABI-specific). Each test of an
// exception_ptr costs one throw. The failure path tests a caught_exception
// instead (matches()), which costs no throw for an exception derived from
// std::exception, and rule_set ranks its types once, when rules are added.
class exception_type {
public:
  template <class E> [[nodiscard]] static exception_type of() noexcept {
    static_assert(
        !std::is_reference_v<
            E> && !std::is_pointer_v<E> && !std::is_array_v<E> && !std::is_function_v<E> && !std::is_void_v<E>,
        "an exception rule names an object type: on<http_error>(), not on<http_error&>() "
        "or on<http_error*>()");
    static_assert(
        !std::is_const_v<E> && !std::is_volatile_v<E>,
        "an exception rule names the type without cv-qualifiers: on<E>(), not on<const E>()");
    return exception_type(typeid(E), &catches_as<E>, &matches_as<E>, &throw_null<E>,
                          &catches_pointer_as<E>);
  }

  // Whether `catch (const E&)` catches `exception`. False for an empty
  // pointer. One rethrow.
  [[nodiscard]] bool catches(const std::exception_ptr& exception) const noexcept {
    return catches_(exception);
  }

  // The same answer for an exception looked into already: no rethrow when
  // it derives from std::exception (see caught_exception::is()).
  [[nodiscard]] bool matches(const caught_exception& thrown) const noexcept {
    return matches_(thrown);
  }

  // Whether every object of this type is also one of `base`: the same type,
  // or one that derives from it publicly and unambiguously.
  [[nodiscard]] bool is_same_or_derived_from(const exception_type& base) const noexcept {
    return base.catches_pointer_(throw_null_);
  }

  [[nodiscard]] std::type_index id() const noexcept { return std::type_index(*info_); }
  [[nodiscard]] const std::type_info& info() const noexcept { return *info_; }
  [[nodiscard]] std::string name() const { return type_name(*info_); }

  friend bool operator==(const exception_type& a, const exception_type& b) noexcept {
    return *a.info_ == *b.info_;
  }
  friend bool operator!=(const exception_type& a, const exception_type& b) noexcept {
    return !(a == b);
  }

private:
  using catches_fn = bool (*)(const std::exception_ptr&) noexcept;
  using matches_fn = bool (*)(const caught_exception&) noexcept;
  using thrower_fn = void (*)();
  using catches_pointer_fn = bool (*)(thrower_fn) noexcept;

  exception_type(const std::type_info& info, catches_fn catches, matches_fn matches,
                 thrower_fn thrower, catches_pointer_fn catches_pointer) noexcept
      : info_(&info), catches_(catches), matches_(matches), throw_null_(thrower),
        catches_pointer_(catches_pointer) {}

  template <class E> static bool catches_as(const std::exception_ptr& exception) noexcept {
    if (!exception)
      return false;
    try {
      std::rethrow_exception(exception);
    } catch (const E&) {
      return true;
    } catch (...) {
      return false;
    }
  }

  template <class E> static bool matches_as(const caught_exception& thrown) noexcept {
    return thrown.is<E>();
  }

  template <class E> [[noreturn]] static void throw_null() { throw static_cast<E*>(nullptr); }

  template <class E> static bool catches_pointer_as(thrower_fn thrower) noexcept {
    try {
      thrower();
    } catch (E*) {
      return true;
    } catch (...) {
      return false;
    }
    return false; // a thrower always throws
  }

  const std::type_info* info_;
  catches_fn catches_;
  matches_fn matches_;
  thrower_fn throw_null_;
  catches_pointer_fn catches_pointer_;
};

} // namespace bus::detail
