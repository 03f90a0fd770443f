// Which broker busctl talks to, chosen as the transport's users choose it:
// --url, else --url-file, else the environment variable BUS_RABBITMQ_URL,
// parsed by the transport's own functions (bus/rabbitmq_settings.hpp), so
// the URL means the same in a service and in busctl and its password is
// never printed.
#pragma once

#include "bus/rabbitmq_settings.hpp"
#include "command_line.hpp"

namespace bus::ctl {

inline constexpr const char* url_variable = "BUS_RABBITMQ_URL";

// `env_url` is the value of BUS_RABBITMQ_URL, or null when it is unset.
// Errors are errc::invalid_configuration (exit code 2), with the URL
// redacted; the connection is named "busctl" on the broker.
[[nodiscard]] result<rabbitmq_settings> resolve_settings(const command_line& cl,
                                                         const char* env_url);

} // namespace bus::ctl
