#include "connection_settings.hpp"

namespace bus::ctl {

result<rabbitmq_settings> resolve_settings(const command_line& cl, const char* env_url) {
  auto chosen = [&]() -> result<rabbitmq_settings> {
    if (cl.url) {
      auto parsed = parse_rabbitmq_url(*cl.url);
      if (!parsed)
        return error{errc::invalid_configuration, "--url: " + parsed.error().message};
      return parsed;
    }
    if (cl.url_file)
      return rabbitmq_settings_from_file(*cl.url_file);
    if (env_url == nullptr || *env_url == '\0')
      return error{errc::invalid_configuration,
                   std::string("no broker given: use --url, --url-file or the environment "
                               "variable ")
                     + url_variable + " (amqp://user:password@host:port/vhost)"};
    auto parsed = parse_rabbitmq_url(env_url);
    if (!parsed)
      return error{errc::invalid_configuration,
                   std::string(url_variable) + ": " + parsed.error().message};
    return parsed;
  }();
  if (!chosen)
    return chosen;
  chosen->connection_name = "busctl";
  // busctl makes its own error messages; nothing of the transport logs here.
  chosen->log = [](rabbitmq_log_level, const std::string&) {};
  return chosen;
}

} // namespace bus::ctl
