// A handler actor that keeps every request unanswered until the test
// releases it, so a test controls exactly how many handlers are "running".
// Promises are delivered inside the actor: CAF 0.17 requires it.
#pragma once

#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "bus/actor_handler.hpp"

namespace bus::test {

using release_atom = caf::atom_constant<caf::atom("release")>;

struct holding_counts {
  std::size_t received = 0;
  std::size_t answered = 0;
  [[nodiscard]] std::size_t holding() const { return received - answered; }
};

// Serves T; (release_atom) answers the oldest request held.
template <class T>
caf::actor spawn_holding_actor(caf::actor_system& sys, std::shared_ptr<holding_counts> counts) {
  return sys.spawn([counts](caf::event_based_actor* self) -> caf::behavior {
    auto held = std::make_shared<std::vector<caf::response_promise>>();
    return {
      [=](bus::handle_atom, const T&) -> caf::result<void> {
        ++counts->received;
        held->push_back(self->make_response_promise());
        return caf::delegated<void>{};
      },
      [=](release_atom) {
        if (counts->answered < held->size())
          (*held)[counts->answered++].deliver(caf::unit);
      },
    };
  });
}

} // namespace bus::test
