// Which transport a wall-clock run uses. Virtual time always runs on the
// harness's in-memory transport: a broker's clock cannot be made virtual.
#include "bus/in_memory_transport.hpp"
#include "run.hpp"

namespace bus::scenario {

namespace {

// The one place that knows about RabbitMQ. To wire it: link bus::rabbitmq
// in tools/bus-scenario/CMakeLists.txt when the target exists, and return
// the connected transport here.
result<transport_ptr> connect_rabbitmq(const std::string& url) {
  (void)url;
  return error{errc::invalid_configuration,
               "bus-scenario was not built with RabbitMQ (configure with "
               "-DBUS_WITH_RABBITMQ=ON, with librabbitmq-dev installed)"};
}

} // namespace

result<transport_ptr> make_transport(const run_options& options) {
  switch (options.transport) {
    case transport_kind::in_memory:
      return transport_ptr(std::make_shared<in_memory_transport>());
    case transport_kind::rabbitmq:
      return connect_rabbitmq(options.url);
  }
  return error{errc::invalid_configuration, "unknown transport"};
}

} // namespace bus::scenario
