#include "masstransit_out.hpp"

#include "percent_encoding.hpp"

namespace bus::detail {

std::string masstransit_broker(const rabbitmq_settings& s) {
  std::string out = "rabbitmq://" + s.host;
  if (s.port != 5672)
    out += ":" + std::to_string(s.port);
  out += "/";
  if (s.vhost != "/")
    out += percent_encode(s.vhost) + "/";
  return out;
}

} // namespace bus::detail
