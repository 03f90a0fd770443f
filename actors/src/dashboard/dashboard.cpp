#include "dashboard.hpp"

#include <cctype>
#include <charconv>
#include <set>

#include "bus/policy/explain_svg.hpp"
#include "bus/policy/json.hpp"
#include "failed_json.hpp"
#include "page.hpp"
#include "status_json.hpp"

namespace bus::detail::dashboard {

namespace {

using metrics::http_request;
using metrics::http_response;

http_response json_response(int status, const nlohmann::json& body) {
  return {status, "application/json", body.dump()};
}

http_response problem(int status, const std::string& text) {
  return json_response(status, {{"error", text}});
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

std::string url_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0
               && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The value of `name` in a query string, decoded; empty if absent.
std::string query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto end = query.find('&');
    auto pair = query.substr(0, end);
    auto eq = pair.find('=');
    if (url_decode(pair.substr(0, eq)) == name)
      return eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1));
    if (end == std::string_view::npos)
      break;
    query.remove_prefix(end + 1);
  }
  return {};
}

failed_query query_from(const std::string& query) {
  return {query_value(query, "queue"), query_value(query, "endpoint"),
          query_value(query, "exception_type"), query_value(query, "id")};
}

// A write's selection, from its JSON body; an error text if it has none.
std::string selection_from(const std::string& body, failed_query& q) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return "the body must be a JSON object";
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  q = {text("queue"), text("endpoint"), text("exception_type"), text("id")};
  if (q.queue.empty())
    return "name the error queue (\"queue\")";
  if (q.id.empty() && q.endpoint.empty() && q.exception_type.empty())
    return "name a message (\"id\") or a group (\"endpoint\" and \"exception_type\")";
  return {};
}

// Compares without stopping at the first difference, so that the time
// taken does not tell how much of a guess was right (only its length).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

std::vector<std::string> error_queues_of(const view& v) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& x : v.extras)
    if (!x.error_queue.empty() && seen.insert(x.error_queue).second)
      out.push_back(x.error_queue);
  return out;
}

// The page reads and changes error queues only, never another queue.
bool is_error_queue(const view& v, const std::string& queue) {
  for (const auto& x : v.extras)
    if (!queue.empty() && x.error_queue == queue)
      return true;
  return false;
}

http_response not_an_error_queue(const std::string& queue) {
  return problem(400, "'" + queue + "' is not the error queue of an endpoint of this bus");
}

} // namespace

dashboard::dashboard(sources from) : from_(std::move(from)) {}

bool dashboard::authorized(const std::string& authorization) const {
  // "Bearer <token>": the scheme's case does not matter, and one or more
  // spaces follow it (RFC 7235, section 2.1); the token is compared exactly.
  static constexpr std::string_view scheme = "bearer";
  if (from_.token.empty() || authorization.size() <= scheme.size()
      || authorization[scheme.size()] != ' ')
    return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i])
      return false;
  auto token = authorization.find_first_not_of(' ', scheme.size());
  return token != std::string::npos && same_secret(authorization.substr(token), from_.token);
}

http_response dashboard::answer(const http_request& request) const {
  const auto& path = request.path;
  if (path == "/api/failed/replay" || path == "/api/failed/purge")
    return write(request);
  if (request.method != "GET")
    return problem(405, request.method + " " + path + " is not allowed: reading is GET");
  if (path == "/" || path == "/index.html")
    return {200, "text/html; charset=utf-8", std::string(page_html())};
  if (path == "/api/status")
    return json_response(200, status_json(from_.read(), !from_.token.empty()));
  static constexpr std::string_view policy_prefix = "/policy/";
  if (path.compare(0, policy_prefix.size(), policy_prefix) == 0)
    return policy(path.substr(policy_prefix.size()), request.query);
  if (path == "/api/failed") {
    if (!from_.queues)
      return json_response(200, {{"available", false}});
    return json_response(200, groups_json(*from_.queues, error_queues_of(from_.read())));
  }
  if (path == "/api/failed/messages") {
    if (!from_.queues)
      return problem(404, "this transport does not show its error queues");
    auto q = query_from(request.query);
    if (!is_error_queue(from_.read(), q.queue))
      return not_an_error_queue(q.queue);
    auto limit_text = query_value(request.query, "limit");
    std::size_t limit = 100;
    if (!limit_text.empty()) {
      const char* last = limit_text.data() + limit_text.size();
      auto [end, ec] = std::from_chars(limit_text.data(), last, limit);
      if (ec != std::errc() || end != last)
        return problem(400, "limit must be a number, not '" + limit_text + "'");
    }
    return json_response(200, messages_json(*from_.queues, q, limit));
  }
  return problem(404, "no page at " + path);
}

// Without an exception type: each handler's policy as JSON, and the types
// the endpoint's handlers threw lately, each with the message type. With
// one: the policy's plan for the latest exception of that type, as JSON,
// SVG or text.
http_response dashboard::policy(const std::string& endpoint, const std::string& query) const {
  auto recent = from_.recent(endpoint);
  if (!recent)
    return problem(404, recent.error().message);
  auto exception_type = query_value(query, "exception_type");
  auto message_type = query_value(query, "message_type");
  if (exception_type.empty()) {
    auto policies = from_.policies(endpoint);
    if (!policies)
      return problem(404, policies.error().message);
    nlohmann::json handlers = nlohmann::json::array();
    for (const auto& [message_type, config] : *policies)
      handlers.push_back({{"message_type", message_type}, {"policy", *config}});
    nlohmann::json seen = nlohmann::json::array();
    for (const auto& e : *recent)
      seen.push_back({{"exception_type", e.exception_type}, {"message_type", e.message_type}});
    return json_response(200, {{"endpoint", endpoint},
                               {"handlers", std::move(handlers)},
                               {"recent_exceptions", std::move(seen)}});
  }
  const recent_exceptions::entry* found = nullptr;
  for (const auto& e : *recent)
    if (e.exception_type == exception_type
        && (message_type.empty() || e.message_type == message_type))
      found = &e;
  if (!found)
    return problem(404, "endpoint '" + endpoint + "' has not seen " + exception_type
                          + " lately: the page explains what its handlers threw");
  auto plan = from_.explain(endpoint, found->message_type, found->exception);
  if (!plan)
    return problem(404, plan.error().message);
  auto format = query_value(query, "format");
  if (format == "svg")
    return {200, "image/svg+xml", to_svg(*plan)};
  if (format == "text")
    return {200, "text/plain; charset=utf-8", to_string(*plan)};
  if (!format.empty() && format != "json")
    return problem(400, "format is json, svg or text, not '" + format + "'");
  nlohmann::json j = *plan;
  j["message_type"] = found->message_type;
  return json_response(200, j);
}

http_response dashboard::write(const http_request& request) const {
  if (request.method != "POST")
    return problem(405, "a change is a POST");
  if (from_.token.empty())
    return problem(403, "this bus's page is read-only: it has no token");
  if (!authorized(request.authorization))
    return problem(403, "a change needs the bus's token (Authorization: Bearer <token>)");
  if (!from_.queues)
    return problem(404, "this transport does not show its error queues");
  failed_query q;
  if (auto mistake = selection_from(request.body, q); !mistake.empty())
    return problem(400, mistake);
  auto v = from_.read();
  if (!is_error_queue(v, q.queue))
    return not_an_error_queue(q.queue);
  auto select = [&q](const failed_message& m) { return q.matches(m); };
  auto done = request.path == "/api/failed/replay"
                ? from_.queues->replay(q.queue, select, q.endpoint, v.now)
                : from_.queues->purge(q.queue, select);
  if (!done)
    return problem(503, to_string(done.error()));
  return json_response(200, {{"done", *done}});
}

} // namespace bus::detail::dashboard
