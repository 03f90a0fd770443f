// masstransit::this_host(): the one part of MassTransit's convention that
// reads the system, kept apart from the pure envelope code.
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>

#include "bus/masstransit.hpp"

namespace bus::masstransit {

namespace {

host_info read_this_host() {
  host_info host;
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

} // namespace

const host_info& this_host() {
  static const host_info host = read_this_host();
  return host;
}

} // namespace bus::masstransit
