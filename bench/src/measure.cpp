#include "measure.hpp"

#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace bench {

std::int64_t heap_in_use() {
  auto info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

void single_arena() {
  mallopt(M_ARENA_MAX, 1);
}

std::int64_t rss_kb() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::int64_t peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

void fine_timer_slack() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

} // namespace bench
