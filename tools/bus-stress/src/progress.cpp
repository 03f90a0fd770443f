#include "progress.hpp"

#include <cstdio>
#include <string>

namespace stress {

progress_line::progress_line(const run_context& run, const bus::message_bus& bus,
                             const traffic& sent)
    : run_(run), bus_(bus), sent_(sent) {
  thread_ = std::thread([this] {
    auto start = std::chrono::steady_clock::now();
    auto next = start;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      next += std::chrono::seconds(1);
      if (wake_.wait_until(lock, next, [this] { return stopping_; }))
        return;
      print(std::chrono::steady_clock::now() - start);
    }
  });
}

progress_line::~progress_line() {
  stop();
}

void progress_line::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void progress_line::print(std::chrono::steady_clock::duration elapsed) const {
  std::uint64_t handled = 0, dead = 0, discarded = 0, requeued = 0, kills = 0;
  std::int64_t in_flight = 0, pending = 0;
  int limited = 0;
  for (int i = 0; i < run_.book.endpoint_count(); ++i) {
    const auto& t = run_.book.tally(i);
    kills += t.kills.load(std::memory_order_relaxed);
    auto s = bus_.stats(t.name);
    if (!s)
      continue;
    handled += s->handled;
    dead += s->dead_lettered;
    discarded += s->discarded;
    requeued += s->requeued;
    in_flight += s->in_flight;
    pending += s->pending_redelivery;
    limited += s->rate_limited;
  }
  auto seconds = std::chrono::duration<double>(elapsed).count();
  auto planned = sent_.planned ? std::to_string(sent_.planned) : std::string("?");
  std::fprintf(stderr,
               "[bus-stress %5.1fs] messages sent %llu/%s, deliveries ended %llu/%llu: handled "
               "%llu dead-lettered %llu discarded %llu | in flight %lld pending redelivery %lld "
               "requeued %llu consumer deaths %llu rate limited %d/%d%s\n",
               seconds, static_cast<unsigned long long>(sent_.messages.load()), planned.c_str(),
               static_cast<unsigned long long>(run_.book.ended()),
               static_cast<unsigned long long>(sent_.deliveries.load()),
               static_cast<unsigned long long>(handled), static_cast<unsigned long long>(dead),
               static_cast<unsigned long long>(discarded), static_cast<long long>(in_flight),
               static_cast<long long>(pending), static_cast<unsigned long long>(requeued),
               static_cast<unsigned long long>(kills), limited, run_.book.endpoint_count(),
               run_.in_outage() ? " (outage)" : "");
}

} // namespace stress
