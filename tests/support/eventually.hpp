// Waits for a state that raises no event the test could wait on (what a
// process wrote to its ledger, what the broker holds, a reconnect counter):
// polls it until it holds or the deadline passes, and says which.
#pragma once

#include <chrono>
#include <thread>

namespace bus::test {

template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds deadline,
                std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

} // namespace bus::test
