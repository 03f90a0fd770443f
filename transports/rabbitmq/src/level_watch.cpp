#include "level_watch.hpp"

#include "management_api.hpp"

namespace bus::detail {

namespace {

std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

} // namespace

level_watch::level_watch(const rabbitmq_settings& settings, const delay_levels& levels,
                         const rabbitmq_logger& log)
    : log_(log), interval_(settings.level_watch_interval), judge_(levels, settings.stranded_margin),
      thread_([this, settings, prefix = levels.prefix() + ".level."] { run(settings, prefix); }) {}

level_watch::~level_watch() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  abort_ = true;
  wake_.notify_all();
  thread_.join();
}

std::vector<stalled_queue> level_watch::stranded() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return judge_.stranded(stranded_levels::clock::now());
}

void level_watch::run(rabbitmq_settings settings, std::string prefix) {
  management_api api(settings, abort_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    look(api, prefix);
    lock.lock();
    wake_.wait_for(lock, interval_, [&] { return stopping_; });
  }
}

void level_watch::look(management_api& api, const std::string& prefix) {
  auto samples = api.queues_named(prefix);
  if (!samples) {
    // Once per outage: the API being down says nothing about the levels.
    if (!api_failing_)
      log_.warn("cannot look at the delay levels " + prefix
                + "* (not watched until it answers again): " + samples.error().message);
    api_failing_ = true;
    return;
  }
  if (api_failing_)
    log_.info("the management API at " + api.base() + " answers again; watching the delay levels "
              + prefix + "*");
  api_failing_ = false;
  std::vector<level_change> changes;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    changes = judge_.observe(*samples, stranded_levels::clock::now());
  }
  for (const auto& c : changes) {
    if (c.stranded)
      log_.warn("delay level '" + c.queue + "' holds " + std::to_string(c.held)
                + " messages past their delay that it does not forward (none moved for "
                + seconds(c.stuck_for) + "; its leader is " + c.leader
                + "): the broker's dead-letter worker for it is not running, as RabbitMQ can "
                  "leave a quorum queue after a leader change (3.10.8 often). Nothing is "
                  "lost; they wait until its leader moves: "
                + stranded_levels::remedy(c.queue) + " (docs/rabbitmq.md, "
                + "\"Stranded delay levels\")");
    else
      log_.info("delay level '" + c.queue + "' forwards its messages again");
  }
}

} // namespace bus::detail
