// A thread that looks at the transport's delay levels through the
// management API every settings.level_watch_interval and reports a
// stranded one (stranded_levels.hpp): a warning naming the level and the
// remedy when it strands, a line when it moves again, and the list for
// transport_health::stalled (readiness detail and metrics).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "bus/rabbitmq_settings.hpp"
#include "bus/transport.hpp"
#include "delay_levels.hpp"
#include "log.hpp"
#include "stranded_levels.hpp"

namespace bus::detail {

class management_api;

class level_watch {
public:
  // Starts the thread; settings.management_url must be set.
  level_watch(const rabbitmq_settings& settings, const delay_levels& levels,
              const rabbitmq_logger& log);
  // Stops and joins it; a request in progress is abandoned.
  ~level_watch();
  level_watch(const level_watch&) = delete;
  level_watch& operator=(const level_watch&) = delete;

  // The stranded levels as of the last look. Any thread, never blocks long.
  [[nodiscard]] std::vector<stalled_queue> stranded() const;

private:
  void run(rabbitmq_settings settings, std::string prefix);
  void look(management_api& api, const std::string& prefix);

  rabbitmq_logger log_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;          // guarded
  std::atomic<bool> abort_{false}; // stopping_, for a request in progress
  stranded_levels judge_;          // guarded
  bool api_failing_ = false; // the watch thread's own
  std::thread thread_;
};

} // namespace bus::detail
