// The transport a stress run drives: in memory, or a RabbitMQ broker when
// bus-stress is built with the RabbitMQ transport (BUS_STRESS_WITH_RABBITMQ).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "bus/error.hpp"
#include "bus/transport.hpp"
#include "options.hpp"

namespace stress {

struct chosen_transport {
  bus::transport_ptr transport;
  // Messages waiting on a queue (to count an error queue), or nothing if
  // the transport cannot tell.
  std::function<std::optional<std::size_t>(const std::string& queue)> depth;
  // What queue and message type names start with: "stress" in memory; on
  // a broker "stress.<run>", unique to the run, so that no earlier run's
  // queues or bindings (they are durable) see this run's messages, nor
  // this run theirs.
  std::string names = "stress";
};

// Whether this bus-stress can drive a RabbitMQ broker.
[[nodiscard]] bool rabbitmq_built() noexcept;

// The transport of `o`: errc::invalid_configuration if it is not built,
// errc::transport_failure if the broker cannot be reached.
[[nodiscard]] bus::result<chosen_transport> choose_transport(const options& o);

} // namespace stress
