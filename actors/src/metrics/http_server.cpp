// The HTTP listener on civetweb (see http_server.hpp). Every answer closes
// its connection, so a scraper or probe never holds a server thread; a
// peer that sends nothing holds one for the request timeout only.
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

const char* reason_of(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 503: return "Service Unavailable";
    default: return status < 500 ? "Client Error" : "Internal Server Error";
  }
}

// Reads the request whole; false if its body is larger than max_body.
bool read_request(mg_connection* conn, http_request& out) {
  const auto* info = mg_get_request_info(conn);
  out.method = info->request_method ? info->request_method : "";
  out.path = info->local_uri ? info->local_uri : "/";
  out.query = info->query_string ? info->query_string : "";
  if (const char* auth = mg_get_header(conn, "Authorization"))
    out.authorization = auth;
  char buffer[4096];
  for (;;) {
    int n = mg_read(conn, buffer, sizeof buffer);
    if (n <= 0)
      return true;
    if (out.body.size() + static_cast<std::size_t>(n) > http_request::max_body)
      return false;
    out.body.append(buffer, static_cast<std::size_t>(n));
  }
}

// Every path without a route of its own, any method.
class other_route final : public CivetHandler {
public:
  explicit other_route(const http_server::routes& serve) : serve_(serve) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return answer(conn); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return answer(conn); }
  bool handlePut(CivetServer*, mg_connection* conn) override { return answer(conn); }
  bool handleDelete(CivetServer*, mg_connection* conn) override { return answer(conn); }

private:
  bool answer(mg_connection* conn) {
    http_request request;
    if (!read_request(conn, request)) {
      reply(conn, 413, reason_of(413), "text/plain; charset=utf-8", "request body too large\n");
      return true;
    }
    if (!serve_.other) {
      reply(conn, 404, reason_of(404), "text/plain; charset=utf-8", "not found\n");
      return true;
    }
    try {
      auto r = serve_.other(request);
      reply(conn, r.status, reason_of(r.status), r.content_type.c_str(), r.body);
    } catch (const std::exception& e) {
      reply(conn, 500, reason_of(500), "text/plain; charset=utf-8",
            std::string("cannot answer: ") + e.what() + '\n');
    }
    return true;
  }
  const http_server::routes& serve_;
};

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
  other_route other{serve};
  std::unique_ptr<CivetServer> server; // last: stopped before the routes go
};

result<std::unique_ptr<http_server>> http_server::start(const std::string& address,
                                                        const http_listener_settings& settings,
                                                        routes serve) {
  auto state = std::make_unique<impl>();
  state->serve = std::move(serve);
  auto timeout_ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(settings.request_timeout).count();
  // civetweb's request_timeout_ms bounds each read and write on a
  // connection (its default, 30 s, let two silent peers stall the probes
  // of a two-thread listener for that long); keep-alive is moot, as every
  // answer closes its connection.
  std::vector<std::string> options = {"listening_ports", address,
                                      "num_threads", std::to_string(settings.threads),
                                      "request_timeout_ms", std::to_string(timeout_ms)};
  try {
    state->server = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return error{errc::invalid_configuration,
                 "cannot serve metrics on '" + address + "': " + e.what()};
  }
  state->server->addHandler("/metrics", state->metrics);
  state->server->addHandler("/health/live", state->live);
  state->server->addHandler("/health/ready", state->ready);
  state->server->addHandler("/", state->other);
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

namespace bus {

std::string validate(const http_listener_settings& settings) {
  std::string mistakes;
  auto add = [&](const std::string& m) { mistakes += (mistakes.empty() ? "" : "; ") + m; };
  if (settings.threads == 0)
    add("the HTTP listener needs at least one thread");
  if (settings.request_timeout < std::chrono::milliseconds(1))
    add("the HTTP listener's request timeout is " + to_hms(settings.request_timeout)
        + "; it must be at least 1 ms");
  return mistakes;
}

} // namespace bus
