// What the RabbitMQ transport needs to write a message in MassTransit's
// convention (issue 25): the base of the addresses MassTransit gives on
// this broker.
#pragma once

#include <string>

#include "bus/masstransit.hpp"
#include "bus/rabbitmq_settings.hpp"

namespace bus::detail {

// "rabbitmq://host[:port]/" with the vhost after it unless it is "/"
// ("rabbitmq://mq/orders/"), as MassTransit writes its addresses: the
// default port left out, the vhost escaped.
[[nodiscard]] std::string masstransit_broker(const rabbitmq_settings& s);

} // namespace bus::detail
