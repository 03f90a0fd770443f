// What the end of an attempt means. A success is reported and settled. A
// failure is looked into once, counted and told to whoever watches; then a
// poison mark, a dependency's breaker, the policy and the retry budget
// decide in that order, and endings.hpp carries the decision out.
#pragma once

#include <exception>

#include "bus/caught_exception.hpp"

#include "consumer/state.hpp"

namespace bus::detail {

// The current attempt failed with `error` (a handler's exception, a store
// or outbox that failed, a consumer that died), looked into already.
void on_failure(consumer* self, caught_exception error);

// The same, for an exception not looked into yet: one rethrow.
void on_failure(consumer* self, std::exception_ptr error);

// The current attempt succeeded and its outbox is out: handled.
void succeed(consumer* self);

} // namespace bus::detail
