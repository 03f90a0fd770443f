// A thrown exception looked into once. Rethrowing a std::exception_ptr is
// the only portable way to see what it holds, and it costs as much as a
// throw; the failure path used to pay it for every rule it tested. A
// caught_exception rethrows once, when it is made (not at all when made by
// handled() in the clause that caught a std::exception), and keeps what it saw:
// the thrown type and, for an exception derived from std::exception, the
// object itself. Every question after that (is it an E? its what()? its
// name?) is answered without a rethrow: by dynamic_cast when the object
// derives from std::exception, by a rethrow per question as before when it
// does not (`throw 42`, a struct of the user's).
//
// The consumer makes one per failed attempt, with handled() where it can,
// and hands it to the policy (error_context_for() in
// bus/policy/error_context.hpp), so the policy, the poison check and the
// fault description share that single look.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "bus/exception_info.hpp"

namespace bus {

class caught_exception {
public:
  // No exception: is<E>() is false for every E, describe() says "none".
  caught_exception() noexcept = default;

  // Looks into `exception` with one rethrow. Never throws.
  explicit caught_exception(std::exception_ptr exception) noexcept;

  // The exception being handled, made inside the clause
  // `catch (const std::exception& e)` that caught it, without a rethrow:
  // `e` is what a rethrow would show. Needs std::current_exception() to
  // refer to the handled object itself, not to a copy, as it does on the
  // Itanium C++ ABI (GCC's and Clang's libraries on Linux: what we build
  // for); tests/libbus/policy/decide_cost_test.cpp checks it.
  [[nodiscard]] static caught_exception handled(const std::exception& e) noexcept;

  [[nodiscard]] const std::exception_ptr& pointer() const noexcept { return exception_; }
  explicit operator bool() const noexcept { return static_cast<bool>(exception_); }

  // The object as a std::exception, or null when it does not derive from
  // std::exception (publicly and unambiguously) or there is none. Valid as
  // long as this object or a copy of pointer() lives.
  [[nodiscard]] const std::exception* std_exception() const noexcept { return std_; }

  // The type of the object as thrown ("int" for `throw 42`); null where the
  // ABI cannot tell (never for one derived from std::exception) or there
  // is no exception.
  [[nodiscard]] const std::type_info* type() const noexcept { return type_; }

  // Whether `catch (const E&)` would catch it. Without a rethrow when it
  // derives from std::exception; with one otherwise. One exception to
  // exactness, which the ABI's dynamic_cast imposes and no real hierarchy
  // meets: an E that the thrown type inherits privately while it also
  // derives from std::exception by a public virtual base counts as caught.
  template <class E> [[nodiscard]] bool is() const noexcept {
    static_assert(!std::is_reference_v<E> && !std::is_pointer_v<E>,
                  "is<E>() names an object type, as a catch clause would");
    if (!exception_)
      return false;
    if (std_ != nullptr) {
      // A class object is never caught as a scalar, and as a class E
      // exactly when the cast finds a unique public E in it.
      if constexpr (std::is_class_v<E>)
        return dynamic_cast<const E*>(std_) != nullptr;
      else
        return false;
    }
    try {
      std::rethrow_exception(exception_);
    } catch (const E&) {
      return true;
    } catch (...) {
      return false;
    }
  }

  // f(const E&)'s result when the exception is an E, else nothing. What f
  // throws passes to the caller. Without a rethrow when the exception derives from
  // std::exception; with one otherwise.
  template <class E, class F>
  auto visit_as(F&& f) const -> std::optional<std::invoke_result_t<F, const E&>> {
    if (!exception_)
      return std::nullopt;
    if (std_ != nullptr) {
      if constexpr (std::is_class_v<E>) {
        if (const auto* typed = dynamic_cast<const E*>(std_))
          return std::forward<F>(f)(*typed);
      }
      return std::nullopt;
    }
    // Called inside the handler, as a user's own catch block would; what
    // f throws leaves the try statement, the clauses below do not see it.
    try {
      std::rethrow_exception(exception_);
    } catch (const E& typed) {
      return std::forward<F>(f)(typed);
    } catch (...) {
    }
    return std::nullopt;
  }

  // Its type's readable name ("bus::test::http_error", "int"); "no
  // exception" when there is none, "unknown" where the ABI cannot tell.
  [[nodiscard]] std::string type_name() const;

  // what() of a std::exception, "" for anything else.
  [[nodiscard]] std::string message() const;

  // The same facts as bus::describe(pointer()), without its rethrow.
  [[nodiscard]] exception_info describe() const noexcept;

private:
  std::exception_ptr exception_;
  const std::exception* std_ = nullptr;
  const std::type_info* type_ = nullptr;
};

// describe() of a caught exception: the same as caught.describe().
[[nodiscard]] exception_info describe(const caught_exception& caught) noexcept;

} // namespace bus
