#include "masstransit_out.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>

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

masstransit::host_info masstransit_host() {
  masstransit::host_info host;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0)
    host.machine_name = name;
  host.process_name = program_invocation_short_name;
  host.process_id = static_cast<long>(::getpid());
  host.assembly = host.process_name;
  host.assembly_version = BUS_VERSION;
  host.framework_version = "C++17";
  utsname system{};
  if (::uname(&system) == 0)
    host.operating_system_version = std::string(system.sysname) + " " + system.release;
  return host;
}

} // namespace bus::detail
