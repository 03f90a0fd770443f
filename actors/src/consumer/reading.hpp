// Readies a delivery for its handler, or ends it unread. A delivery is
// read once, as a consumer takes it: ServiceControl's retries start over,
// its history headers are read with bounds, a fault held back earlier goes
// on to the error queue, a message too large or whose body does not decode
// goes there without its handler, one of no type the endpoint handles is
// read in the conventions the endpoint speaks (MassTransit, NServiceBus,
// its foreign_types mapping) or skipped, and an expired one ends as its
// policy says.
#pragma once

#include "consumer/state.hpp"

namespace bus::detail {

// Makes `d` the current delivery and readies it for its handler. False if
// it ended here already.
[[nodiscard]] bool take_delivery(consumer* self, delivery d, claim_ptr claim, bool throttled,
                                 bool probe);

} // namespace bus::detail
