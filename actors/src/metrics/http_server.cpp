// The HTTP listener on civetweb (see http_server.hpp). Every answer closes
// its connection, so a scraper or probe never holds a server thread.
#include "http_server.hpp"

#include <CivetServer.h>

#include <exception>
#include <vector>

namespace bus::detail::metrics {

namespace {

void reply(mg_connection* conn, int status, const char* reason, const char* type,
           const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            status, reason, type, body.size());
  mg_write(conn, body.data(), body.size());
}

// One route: GET only; what it answers comes from `answer`.
class route final : public CivetHandler {
public:
  using answer = std::function<void(mg_connection*)>;
  explicit route(answer a) : answer_(std::move(a)) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    try {
      answer_(conn);
    } catch (const std::exception& e) {
      reply(conn, 500, "Internal Server Error", "text/plain; charset=utf-8",
            std::string("cannot answer: ") + e.what() + '\n');
    }
    return true;
  }

private:
  answer answer_;
};

} // namespace

struct http_server::impl {
  routes serve;
  route metrics{[this](mg_connection* c) {
    reply(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", serve.metrics());
  }};
  route live{[](mg_connection* c) { reply(c, 200, "OK", "text/plain; charset=utf-8", "live\n"); }};
  route ready{[this](mg_connection* c) {
    auto h = serve.readiness();
    reply(c, h.ready ? 200 : 503, h.ready ? "OK" : "Service Unavailable",
          "text/plain; charset=utf-8", h.describe());
  }};
  std::unique_ptr<CivetServer> server; // last: stopped before the routes go
};

result<std::unique_ptr<http_server>> http_server::start(const std::string& address,
                                                        routes serve) {
  auto state = std::make_unique<impl>();
  state->serve = std::move(serve);
  std::vector<std::string> options = {"listening_ports", address, "num_threads", "2"};
  try {
    state->server = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return error{errc::invalid_configuration,
                 "cannot serve metrics on '" + address + "': " + e.what()};
  }
  state->server->addHandler("/metrics", state->metrics);
  state->server->addHandler("/health/live", state->live);
  state->server->addHandler("/health/ready", state->ready);
  auto ports = state->server->getListeningPorts();
  auto host = address.substr(0, address.rfind(':'));
  auto bound = ports.empty() ? address : host + ':' + std::to_string(ports.front());
  return std::unique_ptr<http_server>(new http_server(std::move(state), std::move(bound)));
}

http_server::http_server(std::unique_ptr<impl> state, std::string address)
  : impl_(std::move(state)), address_(std::move(address)) {}

http_server::~http_server() {
  if (impl_ && impl_->server)
    impl_->server->close();
}

} // namespace bus::detail::metrics
