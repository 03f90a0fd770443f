// The check scripts/build-caf-tsan.sh runs on the libcaf_core it built: that
// ThreadSanitizer, with this library, judges actors on CAF's real threads.
//
//   caf_tsan_check handoff   must run without a report: the main thread
//                            writes plain memory, then asks a new actor
//                            (on a CAF worker) to read it, 200 times. CAF
//                            orders the write before the read through its
//                            mailbox; with an uninstrumented libcaf_core TSan
//                            cannot see that and reports races here.
//   caf_tsan_check race      must be reported: two actors on CAF's workers
//                            increment one int without synchronisation,
//                            both at once (they meet on a relaxed atomic,
//                            which orders nothing for TSan, before they
//                            write), so no ordering CAF's scheduler creates
//                            between their runs can hide it.
//
// The exit status of handoff is TSan's (66 on a report, with
// halt_on_error=1); the script looks for the report of race in its output.
#include <caf/all.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

int shared_counter = 0;  // the race: two actors write it unsynchronised
std::atomic<int> racers_running{0};
int handed_off[4];       // written by main before each request, read by the actor

caf::behavior racer(caf::event_based_actor*) {
  return {[](int n) {
    racers_running.fetch_add(1, std::memory_order_relaxed);
    while (racers_running.load(std::memory_order_relaxed) < 2) {
      // the other racer is on its way to another worker
    }
    for (int i = 0; i < n; ++i)
      ++shared_counter;
  }};
}

caf::behavior reader(caf::event_based_actor*) {
  return {[](caf::atom_value) { return handed_off[0] + handed_off[3]; }};
}

} // namespace

int main(int argc, char** argv) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 4);
  caf::actor_system sys{cfg};
  if (argc > 1 && std::strcmp(argv[1], "race") == 0) {
    caf::anon_send(sys.spawn(racer), 1000);
    caf::anon_send(sys.spawn(racer), 1000);
    return 0;
  }
  for (int round = 0; round < 200; ++round) {
    handed_off[0] = round;
    handed_off[3] = round;
    caf::scoped_actor self{sys};
    self->request(sys.spawn(reader), caf::infinite, caf::atom("get"))
      .receive([&](int sum) { if (sum != 2 * round) std::abort(); },
               [&](caf::error&) { std::abort(); });
  }
  return 0;
}
