#include "transport_choice.hpp"

#include <random>

#include "bus/in_memory_transport.hpp"

#ifdef BUS_STRESS_WITH_RABBITMQ
#include "bus/rabbitmq_transport.hpp"
#endif

namespace stress {

bool rabbitmq_built() noexcept {
#ifdef BUS_STRESS_WITH_RABBITMQ
  return true;
#else
  return false;
#endif
}

namespace {

bus::result<chosen_transport> connect_rabbitmq(const options& o) {
#ifdef BUS_STRESS_WITH_RABBITMQ
  auto settings = bus::parse_rabbitmq_url(o.url);
  if (!settings)
    return settings.error();
  settings->connection_name = "bus-stress";
  auto connected = bus::rabbitmq_transport::connect(*settings);
  if (!connected)
    return connected.error();
  std::shared_ptr<bus::rabbitmq_transport> broker = std::move(*connected);
  chosen_transport out;
  out.transport = broker;
  out.depth = [broker](const std::string& queue) -> std::optional<std::size_t> {
    auto n = broker->message_count(queue);
    return n ? std::optional<std::size_t>(*n) : std::nullopt;
  };
  out.names = "stress." + std::to_string(std::random_device{}() % 1000000);
  return out;
#else
  (void)o;
  return bus::error{bus::errc::invalid_configuration,
                    "the RabbitMQ transport is not built into this bus-stress (configure with "
                    "-DBUS_WITH_RABBITMQ=ON, with librabbitmq-dev installed)"};
#endif
}

} // namespace

bus::result<chosen_transport> choose_transport(const options& o) {
  if (o.transport == "rabbitmq")
    return connect_rabbitmq(o);
  auto memory = std::make_shared<bus::in_memory_transport>();
  chosen_transport out;
  out.transport = memory;
  out.depth = [memory](const std::string& queue) -> std::optional<std::size_t> {
    return memory->depth(queue);
  };
  return out;
}

} // namespace stress
