// The failure of an attempt whose consumer actor died before it ended (an
// actor-served handler that killed its caller, an exit sent to it). The
// endpoint gives the message to a new consumer, which asks the policy what
// follows like for any exception: rules can name it
// (`p.on<bus::consumer_died>().dead_letter()`), and a message that kills
// every consumer ends on the error queue instead of looping.
#pragma once

#include <stdexcept>
#include <string>

namespace bus {

class consumer_died : public std::runtime_error {
public:
  explicit consumer_died(const std::string& what) : std::runtime_error(what) {}
};

} // namespace bus
