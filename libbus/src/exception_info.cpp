// Describing a thrown exception: the one rethrow of a caught_exception
// (none when it is made in the clause that caught it),
// the facts it keeps, and describe() built on them. Kept in one file with
// exception_info because both answer the same question, and so that every
// build that lists exception_info.cpp (the fuzz build names libbus's
// sources one by one) has caught_exception too.
#include "bus/exception_info.hpp"

#include "bus/caught_exception.hpp"
#include "bus/policy/exception_type.hpp"

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define BUS_CAUGHT_HAVE_CXXABI 1
#else
#define BUS_CAUGHT_HAVE_CXXABI 0
#endif

namespace bus {

namespace {

// The thrown type as the ABI recorded it, inside a catch clause.
const std::type_info* current_type() noexcept {
#if BUS_CAUGHT_HAVE_CXXABI
  return abi::__cxa_current_exception_type();
#else
  return nullptr;
#endif
}

} // namespace

caught_exception::caught_exception(std::exception_ptr exception) noexcept
    : exception_(std::move(exception)) {
  if (!exception_)
    return;
  try {
    std::rethrow_exception(exception_);
  } catch (const std::exception& e) {
    // rethrow_exception throws the object exception_ refers to, so `e`
    // lives as long as exception_ does. typeid of a polymorphic object is
    // its dynamic type: the type as thrown, whatever the ABI.
    std_ = &e;
    type_ = &typeid(e);
  } catch (...) {
    type_ = current_type();
  }
}

caught_exception caught_exception::handled(const std::exception& e) noexcept {
  caught_exception c;
  c.exception_ = std::current_exception();
  if (c.exception_) {
    c.std_ = &e;
    c.type_ = &typeid(e);
  }
  return c;
}

std::string caught_exception::type_name() const {
  if (!exception_)
    return "no exception";
  return type_ ? detail::type_name(*type_) : std::string("unknown");
}

std::string caught_exception::message() const {
  return std_ ? std::string(std_->what()) : std::string();
}

exception_info caught_exception::describe() const noexcept {
  if (!exception_)
    return {"none", "no exception"};
  try {
    if (std_)
      return {detail::type_name(*type_), std_->what()};
    auto name = type_ ? detail::type_name(*type_) : std::string("unknown");
    return {name, "an exception of type " + name + " (not derived from std::exception)"};
  } catch (...) {
    return {"unknown", "the exception could not be described"};
  }
}

exception_info describe(const caught_exception& caught) noexcept {
  return caught.describe();
}

exception_info describe(const std::exception_ptr& ptr) noexcept {
  // One rethrow, in caught_exception, which names a type with the same
  // function as the policy's rules, so a fault header and a rule's
  // description always agree on a type's name.
  return caught_exception(ptr).describe();
}

} // namespace bus
