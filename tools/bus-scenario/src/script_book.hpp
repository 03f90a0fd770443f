// What the scripted handlers have done so far: how many times each message
// was attempted, and how many consumers were killed. The book, not the bus,
// numbers the attempts: a consumer that dies returns its message to the
// queue as it was, so nothing in the envelope tells the next attempt from
// the first.
//
// Thread-safe: on the wall clock several consumers call it at once.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "bus/handler_context.hpp"
#include "scenario.hpp"

namespace bus::scenario {

class script_book {
public:
  // `clock`: the time since the scenario started, virtual or not; outages
  // are read against it. The messages of `s` that have scripts of their
  // own follow those instead of their handler's.
  script_book(std::function<duration()> clock, const scenario& s);

  // Counts an attempt of message `name` by handler `h` and says what it
  // does: fail with the outage in force, else the step of the message's
  // script (or the handler's) for this attempt.
  [[nodiscard]] step next(const handler_spec& h, const std::string& name);
  void record_death();

  [[nodiscard]] int attempts(const std::string& name) const;
  [[nodiscard]] int total_attempts() const;
  [[nodiscard]] int deaths() const;

private:
  std::function<duration()> clock_;
  std::map<std::string, std::vector<step>> own_scripts_; // by message name; read only
  mutable std::mutex mutex_;
  std::map<std::string, int> attempts_;
  int deaths_ = 0;
};

// The step for attempt `attempt` (1-based) of `script`, each step taken
// `times` times, the last one repeating for ever.
[[nodiscard]] const step& step_for(const std::vector<step>& script, int attempt);

// Does `s` in a handler served by a function: returns, throws the step's
// exception, or marks the message as poison. Never a "die" step: the parser
// gives those scripts to actors.
void perform(const step& s, handler_context& ctx);

} // namespace bus::scenario
