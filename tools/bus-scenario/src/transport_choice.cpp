// Which transport a wall-clock run uses. Virtual time always runs on the
// harness's in-memory transport: a broker's clock cannot be made virtual.
#include "bus/in_memory_transport.hpp"
#include "run.hpp"

#ifdef BUS_SCENARIO_WITH_RABBITMQ
#include "bus/rabbitmq_transport.hpp"
#endif

namespace bus::scenario {

namespace {

// The one place that knows about RabbitMQ.
result<transport_ptr> connect_rabbitmq(const std::string& url) {
#ifdef BUS_SCENARIO_WITH_RABBITMQ
  auto settings = parse_rabbitmq_url(url);
  if (!settings)
    return settings.error();
  settings->connection_name = "bus-scenario";
  auto transport = rabbitmq_transport::connect(*settings);
  if (!transport)
    return transport.error();
  return transport_ptr(std::move(*transport));
#else
  (void)url;
  return error{errc::invalid_configuration,
               "bus-scenario was not built with RabbitMQ (configure with "
               "-DBUS_WITH_RABBITMQ=ON, with librabbitmq-dev installed)"};
#endif
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
