// The bus's metrics in Prometheus form (the table in docs/metrics.md).
// The hot path never calls prometheus-cpp: counters live in each
// endpoint's endpoint_counters (what bus.stats() returns) and durations in
// lock-free histograms (instruments.hpp). sync() copies them into
// prometheus-cpp's families: each counter grows by what its source grew
// since the last sync, so after a sync every exported counter equals the
// bus.stats() value it comes from. Any thread; syncs are serialised.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "bus_view.hpp"
#include "instruments.hpp"

namespace prometheus {
class Registry;
} // namespace prometheus

namespace bus::detail::metrics {

class exporter {
public:
  // Adds the bus's families to `registry`; `view` describes the bus now
  // (called during sync, from the thread that syncs). `sends` are the
  // durations of sends from outside handlers.
  exporter(std::shared_ptr<prometheus::Registry> registry, std::function<bus_view()> view,
           std::shared_ptr<const send_instruments> sends);
  ~exporter();
  exporter(const exporter&) = delete;
  exporter& operator=(const exporter&) = delete;

  // Brings every family up to date with the bus; returns the view it read.
  bus_view sync();

  [[nodiscard]] const std::shared_ptr<prometheus::Registry>& registry() const noexcept {
    return registry_;
  }

private:
  struct families;
  struct endpoint_series;
  struct transport_series;

  std::shared_ptr<prometheus::Registry> registry_;
  std::function<bus_view()> view_;
  std::shared_ptr<const send_instruments> sends_;
  std::mutex mutex_; // serialises sync(): the series below and the last values they pushed
  std::unique_ptr<families> families_;
  std::map<const endpoint_status*, std::unique_ptr<endpoint_series>> endpoints_;
  std::unique_ptr<transport_series> transport_;
};

} // namespace bus::detail::metrics
