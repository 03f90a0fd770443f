// The failure of a handler served by a user's actor: it answered with an
// error, died, or did not answer in time. Carried into the recoverability
// policy like any exception a handler throws.
#pragma once

#include <stdexcept>
#include <string>

namespace bus {

class handler_actor_error : public std::runtime_error {
public:
  explicit handler_actor_error(const std::string& what) : std::runtime_error(what) {}
};

} // namespace bus
