// One bus's metrics service (see service.hpp).
#include "service.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace bus::detail::metrics {

result<std::unique_ptr<service>> service::start(service_options options,
                                                std::function<bus_view()> view,
                                                std::shared_ptr<const send_instruments> sends) {
  std::unique_ptr<service> s(new service());
  auto registry = options.user_registry ? options.user_registry
                                        : std::make_shared<prometheus::Registry>();
  s->exporter_ = std::make_unique<exporter>(registry, std::move(view), std::move(sends));
  if (options.address) {
    auto* self = s.get();
    auto server = http_server::start(
      *options.address, options.listener, {[self] { return self->scrape(); }, [self] { return self->health(); },
                         std::move(options.other_routes)});
    if (!server)
      return server.error();
    s->server_ = std::move(*server);
  }
  if (options.user_registry) {
    s->exporter_->sync(); // the families have their series from the start
    s->refresher_ = std::thread([self = s.get(), period = options.refresh] {
      self->refresh_loop(period);
    });
  }
  return s;
}

service::~service() {
  server_.reset();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable())
    refresher_.join();
}

void service::refresh_loop(duration period) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    exporter_->sync();
    lock.lock();
  }
}

std::string service::scrape() {
  exporter_->sync();
  return prometheus::TextSerializer().Serialize(exporter_->registry()->Collect());
}

health_report service::health() {
  return assess(exporter_->sync());
}

std::string service::address() const { return server_ ? server_->address() : std::string(); }

} // namespace bus::detail::metrics
