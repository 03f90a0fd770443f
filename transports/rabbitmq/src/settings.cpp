#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <vector>

#include "bus/rabbitmq_settings.hpp"
#include "percent_encoding.hpp"

namespace bus {

namespace {

// The longest TTL a level queue may get. RabbitMQ 3.10 accepted
// x-message-ttl up to 2^27 s (measured, docs/rabbitmq.md); beyond it the
// declaration would fail at the first delayed send, so refuse it up front.
constexpr std::int64_t max_level_ttl_ms = 134217728000;

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

template <class Int> bool parse_number(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// Applies one ?key=value of the URL; returns a mistake or an empty string.
std::string apply_query(rabbitmq_settings& s, const std::string& key, const std::string& value) {
  auto millis = [&](std::chrono::milliseconds& field) -> std::string {
    std::int64_t n = 0;
    if (!parse_number(value, n) || n < 0)
      return key + "=" + value + " is not a number of milliseconds";
    field = std::chrono::milliseconds(n);
    return {};
  };
  auto flag = [&](bool& field) -> std::string {
    if (value == "true" || value == "1")
      field = true;
    else if (value == "false" || value == "0")
      field = false;
    else
      return key + "=" + value + " is neither true nor false";
    return {};
  };
  if (key == "heartbeat") {
    std::int64_t n = 0;
    if (!parse_number(value, n) || n < 0)
      return "heartbeat=" + value + " is not a number of seconds";
    s.heartbeat = std::chrono::seconds(n);
    return {};
  }
  if (key == "connection_timeout")
    return millis(s.connect_timeout);
  if (key == "operation_timeout")
    return millis(s.operation_timeout);
  if (key == "confirm_stall_timeout")
    return millis(s.confirm_stall_timeout);
  if (key == "reconnect_delay_min")
    return millis(s.reconnect_delay_min);
  if (key == "reconnect_delay_max")
    return millis(s.reconnect_delay_max);
  if (key == "delay_unit")
    return millis(s.delay_unit);
  if (key == "delay_levels") {
    if (!parse_number(value, s.delay_levels))
      return "delay_levels=" + value + " is not a whole number";
    return {};
  }
  if (key == "cacertfile") {
    s.ca_cert_file = value;
    return {};
  }
  if (key == "certfile") {
    s.client_cert_file = value;
    return {};
  }
  if (key == "keyfile") {
    s.client_key_file = value;
    return {};
  }
  if (key == "verify") {
    if (value == "verify_peer")
      s.verify_peer = true;
    else if (value == "verify_none")
      s.verify_peer = s.verify_hostname = false;
    else
      return "verify=" + value + " is neither verify_peer nor verify_none";
    return {};
  }
  if (key == "verify_hostname")
    return flag(s.verify_hostname);
  if (key == "queue_type") {
    if (value == "quorum")
      s.queue_type = rabbitmq_queue_type::quorum;
    else if (value == "classic")
      s.queue_type = rabbitmq_queue_type::classic;
    else
      return "queue_type=" + value + " is neither quorum nor classic";
    return {};
  }
  if (key == "connection_name") {
    s.connection_name = value;
    return {};
  }
  if (key == "delivery_limit") {
    if (!parse_number(value, s.delivery_limit))
      return "delivery_limit=" + value + " is not a whole number";
    return {};
  }
  if (key == "error_queue_suffix") {
    s.error_queue_suffix = value;
    return {};
  }
  if (key == "skipped_queue_suffix") {
    s.skipped_queue_suffix = value;
    return {};
  }
  if (key == "management_url") {
    s.management_url = value;
    return {};
  }
  if (key == "level_watch_interval")
    return millis(s.level_watch_interval);
  if (key == "stranded_margin")
    return millis(s.stranded_margin);
  return "unknown parameter '" + key
         + "' (known: heartbeat, connection_timeout, operation_timeout, confirm_stall_timeout, "
           "cacertfile, certfile, keyfile, verify, verify_hostname, queue_type, delay_unit, "
           "delay_levels, "
           "reconnect_delay_min, reconnect_delay_max, connection_name, delivery_limit, "
           "error_queue_suffix, skipped_queue_suffix, management_url, level_watch_interval, "
           "stranded_margin)";
}

} // namespace

std::string redact_url(std::string_view url) {
  auto scheme_end = url.find("://");
  auto start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  // The user info ends at the last '@' of the authority (a password may
  // hold '@' unencoded in a sloppy URL: redact all of it then).
  auto authority_end = url.find_first_of("/?#", start);
  auto authority =
      url.substr(start, authority_end == std::string_view::npos ? std::string_view::npos
                                                                : authority_end - start);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos)
    return std::string(url);
  auto colon = authority.substr(0, at).find(':');
  if (colon == std::string_view::npos)
    return std::string(url);
  std::string out(url.substr(0, start + colon + 1));
  out += "***";
  out += url.substr(start + at);
  return out;
}

std::vector<rabbitmq_node> rabbitmq_settings::nodes() const {
  std::vector<rabbitmq_node> out{rabbitmq_node{host, port}};
  out.insert(out.end(), failover_nodes.begin(), failover_nodes.end());
  return out;
}

std::string rabbitmq_settings::describe() const {
  std::string out = tls ? "amqps://" : "amqp://";
  out += detail::percent_encode(user) + "@";
  bool first = true;
  for (const auto& n : nodes()) {
    out += first ? "" : ",";
    first = false;
    out += n.host.find(':') != std::string::npos ? "[" + n.host + "]" : n.host;
    out += ":" + std::to_string(n.port);
  }
  out += "/" + detail::percent_encode(vhost);
  if (tls && !verify_peer)
    out += " (TLS certificate NOT verified)";
  return out;
}

result<void> rabbitmq_settings::validate() const {
  std::vector<std::string> mistakes;
  if (host.empty())
    mistakes.push_back("the host is empty");
  if (port == 0)
    mistakes.push_back("the port is 0");
  for (const auto& n : failover_nodes) {
    if (n.host.empty())
      mistakes.push_back("a failover node's host is empty");
    if (n.port == 0)
      mistakes.push_back("the port of failover node '" + n.host + "' is 0");
  }
  if (queue_type == rabbitmq_queue_type::quorum) {
    if (delivery_limit < 1)
      mistakes.push_back("delivery_limit must be at least 1 (RabbitMQ 3.10 dead-letters at the "
                         "first return below that)");
    if (error_queue_suffix.empty())
      mistakes.push_back("error_queue_suffix must not be empty with quorum queues");
  }
  if (user.empty())
    mistakes.push_back("the user is empty");
  if (connect_timeout.count() <= 0)
    mistakes.push_back("connect_timeout must be positive");
  if (operation_timeout.count() <= 0)
    mistakes.push_back("operation_timeout must be positive");
  if (confirm_stall_timeout.count() < 0
      || (confirm_stall_timeout.count() > 0 && confirm_stall_timeout >= operation_timeout))
    mistakes.push_back("confirm_stall_timeout must be 0 (a quarter of operation_timeout) or "
                       "shorter than operation_timeout, or no stalled channel is ever left "
                       "before its sends fail");
  if (heartbeat.count() < 0 || heartbeat.count() > 65535)
    mistakes.push_back("heartbeat must be between 0 and 65535 seconds");
  if (reconnect_delay_min.count() <= 0 || reconnect_delay_max < reconnect_delay_min)
    mistakes.push_back("reconnect delays need 0 < reconnect_delay_min <= reconnect_delay_max");
  if (delay_unit.count() <= 0)
    mistakes.push_back("delay_unit must be at least 1 ms");
  if (delay_levels < 1 || delay_levels > 40) {
    mistakes.push_back("delay_levels must be between 1 and 40");
  } else if (delay_unit.count() > 0
             && delay_unit.count() > (max_level_ttl_ms >> (delay_levels - 1))) {
    mistakes.push_back(
        "the highest delay level would hold messages " + std::to_string(delay_unit.count())
        + " ms * 2^" + std::to_string(delay_levels - 1)
        + ", longer than RabbitMQ's largest message TTL (" + std::to_string(max_level_ttl_ms)
        + " ms): use fewer levels or a smaller unit");
  }
  if (!management_url.empty()) {
    auto scheme_end = management_url.find("://");
    auto scheme = management_url.substr(0, scheme_end);
    if (scheme_end == std::string::npos || (scheme != "http" && scheme != "https"))
      mistakes.push_back("management_url '" + redact_url(management_url)
                         + "' is not an http:// or https:// URL");
    else if (management_url.find('@') != std::string::npos)
      mistakes.push_back("management_url must not carry a user: the API is asked as the AMQP "
                         "user");
    if (level_watch_interval.count() <= 0)
      mistakes.push_back("level_watch_interval must be positive");
  }
  if (stranded_margin.count() < 0)
    mistakes.push_back("stranded_margin must not be negative");
  if (client_cert_file.empty() != client_key_file.empty())
    mistakes.push_back("a client certificate needs both certfile and keyfile");
  if (!tls && (!ca_cert_file.empty() || !client_cert_file.empty()))
    mistakes.push_back("TLS files are set but the URL is not amqps://");
  if (mistakes.empty())
    return {};
  std::string msg = "RabbitMQ settings for " + describe() + ": ";
  for (std::size_t i = 0; i < mistakes.size(); ++i)
    msg += (i ? "; " : "") + mistakes[i];
  return error{errc::invalid_configuration, msg};
}

result<rabbitmq_settings> parse_rabbitmq_url(std::string_view url) {
  auto fail = [&](const std::string& why) -> result<rabbitmq_settings> {
    return error{errc::invalid_configuration, "bad RabbitMQ URL '" + redact_url(url) + "': " + why};
  };
  rabbitmq_settings s;
  std::string_view rest = trim(url);
  if (rest.substr(0, 8) == "amqps://") {
    s.tls = true;
    s.port = 5671;
    rest.remove_prefix(8);
  } else if (rest.substr(0, 7) == "amqp://") {
    rest.remove_prefix(7);
  } else {
    return fail("it must start with amqp:// or amqps://");
  }

  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  bool has_path = false;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    has_path = true;
    rest = rest.substr(0, slash);
  }
  std::string_view hostport = rest;
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    auto userinfo = rest.substr(0, at);
    hostport = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    if (!percent_decode(userinfo.substr(0, colon), s.user))
      return fail("the user has a bad %-escape");
    if (colon != std::string_view::npos && !percent_decode(userinfo.substr(colon + 1), s.password))
      return fail("the password has a bad %-escape");
  }
  bool first_node = true;
  const auto default_port = s.port; // the scheme's, for every node without its own
  while (true) {
    auto comma = hostport.find(',');
    auto one = hostport.substr(0, comma);
    rabbitmq_node node{std::string{}, default_port};
    std::string_view portpart;
    if (!one.empty() && one.front() == '[') { // [::1]:5672
      auto close = one.find(']');
      if (close == std::string_view::npos)
        return fail("an IPv6 host needs its closing ']'");
      node.host = std::string(one.substr(1, close - 1));
      auto after = one.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':')
          return fail("unexpected text after the host");
        portpart = after.substr(1);
      }
    } else {
      auto colon = one.find(':');
      node.host = std::string(one.substr(0, colon));
      if (colon != std::string_view::npos)
        portpart = one.substr(colon + 1);
    }
    if (node.host.empty()) {
      if (!first_node || comma != std::string_view::npos)
        return fail("an empty host in the list of nodes");
      node.host = "localhost";
    }
    if (!portpart.empty()) {
      unsigned port = 0;
      if (!parse_number(portpart, port) || port == 0 || port > 65535)
        return fail("the port '" + std::string(portpart) + "' is not a number from 1 to 65535");
      node.port = static_cast<std::uint16_t>(port);
    }
    if (first_node) {
      s.host = node.host;
      s.port = node.port;
    } else {
      s.failover_nodes.push_back(std::move(node));
    }
    first_node = false;
    if (comma == std::string_view::npos)
      break;
    hostport = hostport.substr(comma + 1);
  }
  if (has_path && !path.empty()) {
    if (path.find('/') != std::string_view::npos)
      return fail("the vhost must be one path segment (write the vhost '/' as %2F)");
    if (!percent_decode(path, s.vhost))
      return fail("the vhost has a bad %-escape");
  }

  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    std::string key, value;
    if (!percent_decode(pair.substr(0, eq), key)
        || (eq != std::string_view::npos && !percent_decode(pair.substr(eq + 1), value)))
      return fail("a query parameter has a bad %-escape");
    if (auto mistake = apply_query(s, key, value); !mistake.empty())
      return fail(mistake);
  }
  if (auto valid = s.validate(); !valid)
    return valid.error();
  return s;
}

result<rabbitmq_settings> rabbitmq_settings_from_env(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0')
    return error{errc::invalid_configuration,
                 std::string("the environment variable ") + variable
                     + " is not set (expected amqp://user:password@host:port/vhost)"};
  auto parsed = parse_rabbitmq_url(value);
  if (!parsed)
    return error{errc::invalid_configuration,
                 std::string(variable) + ": " + parsed.error().message};
  return parsed;
}

result<rabbitmq_settings> rabbitmq_settings_from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return error{errc::invalid_configuration, "cannot read RabbitMQ settings file '" + path + "'"};
  std::string line;
  while (std::getline(in, line)) {
    auto text = trim(line);
    if (text.empty() || text.front() == '#')
      continue;
    auto parsed = parse_rabbitmq_url(text);
    if (!parsed)
      return error{errc::invalid_configuration, path + ": " + parsed.error().message};
    return parsed;
  }
  return error{errc::invalid_configuration,
               "RabbitMQ settings file '" + path + "' holds no URL (only blank or # lines)"};
}

} // namespace bus
