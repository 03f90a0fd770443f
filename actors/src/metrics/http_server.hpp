// The bus's own HTTP listener (bus_builder::metrics): /metrics in
// Prometheus's text format, /health/live and /health/ready, and every other
// path to one more route (the bus's page, dashboard.hpp). civetweb (which
// prometheus-cpp's exposer is built on) runs it on threads of its own, a
// connection per thread, each wait on a peer bounded by the settings'
// request timeout (bus/http_listener.hpp). prometheus::Exposer is not used
// because it serves collectables only, and the health probes belong on the
// same port as the metrics.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "bus/error.hpp"
#include "bus/health.hpp"
#include "bus/http_listener.hpp"

namespace bus::detail::metrics {

// A request for the other route, read whole (bodies up to max_body).
struct http_request {
  static constexpr std::size_t max_body = 64 * 1024;
  std::string method; // GET, POST, ...
  std::string path;   // decoded, without the query
  std::string query;  // as sent, without '?'
  std::string authorization;
  std::string body;
};

struct http_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class http_server {
public:
  struct routes {
    std::function<std::string()> metrics;    // the scrape's body
    std::function<health_report()> readiness; // /health/ready: 200 if ready, else 503
    std::function<http_response(const http_request&)> other; // null: 404
  };

  // Listens on `address` ("host:port"; port 0 picks a free one), with
  // valid `settings` (validate()). errc::invalid_configuration if it
  // cannot listen there.
  [[nodiscard]] static result<std::unique_ptr<http_server>>
  start(const std::string& address, const http_listener_settings& settings, routes serve);
  ~http_server(); // stops listening; returns once no request runs any more

  // "host:port" as bound, the port resolved.
  [[nodiscard]] const std::string& address() const noexcept { return address_; }

  struct impl;

private:
  explicit http_server(std::unique_ptr<impl> state, std::string address);
  std::unique_ptr<impl> impl_;
  std::string address_;
};

} // namespace bus::detail::metrics
