// Everything metrics of one bus, owned by the bus while it lives: the
// exporter, the bus's own HTTP listener if it serves one, and, for a
// registry the user scrapes through their own exposer, a thread that syncs
// the exporter every `refresh` (the user's exposer does not ask us before
// it reads the registry). Built only when the builder asked for metrics.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bus/error.hpp"
#include "bus/time.hpp"
#include "exporter.hpp"
#include "http_server.hpp"

namespace bus::detail::metrics {

struct service_options {
  std::optional<std::string> address;                 // serve here ("host:port")
  http_listener_settings listener;                    // its threads and deadline
  std::shared_ptr<prometheus::Registry> user_registry; // register into this one
  duration refresh = std::chrono::seconds(1);         // sync period for user_registry
  // What the listener answers beyond /metrics and /health (the bus's page).
  std::function<http_response(const http_request&)> other_routes;
};

class service {
public:
  [[nodiscard]] static result<std::unique_ptr<service>>
  start(service_options options, std::function<bus_view()> view,
        std::shared_ptr<const send_instruments> sends);
  ~service(); // stops the listener and the sync thread

  // The scrape's text: synced first.
  [[nodiscard]] std::string scrape();
  // Syncs (so that gauges and counters are fresh) and judges readiness.
  [[nodiscard]] health_report health();
  // "host:port" the listener bound, empty without one.
  [[nodiscard]] std::string address() const;

private:
  service() = default;
  void refresh_loop(duration period);

  std::unique_ptr<exporter> exporter_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false; // guarded by mutex_
  std::thread refresher_;
  std::unique_ptr<http_server> server_; // last: stops first, while the exporter is there
};

} // namespace bus::detail::metrics
