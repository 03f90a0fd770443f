// For tests of a stop that once hung: should the actors under test still
// run when the test ends (a stop that never finished), the actor system is
// told not to wait for them as it shuts down, so that the test fails on
// its checks instead of hanging ctest. Declare it after the bus it guards,
// so that it is destroyed first.
#pragma once

#include <functional>
#include <utility>

#include <caf/actor_system.hpp>

namespace bus::test {

class shutdown_anyway {
public:
  // `finished` tells whether everything the test started has ended.
  shutdown_anyway(caf::actor_system& sys, std::function<bool()> finished)
    : sys_(sys), finished_(std::move(finished)) {}
  shutdown_anyway(const shutdown_anyway&) = delete;
  shutdown_anyway& operator=(const shutdown_anyway&) = delete;

  ~shutdown_anyway() {
    if (!finished_())
      sys_.await_actors_before_shutdown(false);
  }

private:
  caf::actor_system& sys_;
  std::function<bool()> finished_;
};

} // namespace bus::test
