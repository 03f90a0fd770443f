// Times one handler attempt for metrics, from the consumer: its duration
// by outcome and, for a message's first attempt on its first delivery, the
// time since its bus-sent-at. It starts from the time the handler's context
// already read and reads the endpoint's clock once more as the attempt
// ends: a clock read costs 20-80 ns here, a good part of a no-op message.
// With metrics off (no instruments on the endpoint) it reads no clock and
// costs one null check.
#pragma once

#include "endpoint_runtime.hpp"
#include "instruments.hpp"

namespace bus::detail::metrics {

class attempt_timer {
public:
  // `slot` is the handler about to run, one of rt's definition's handlers;
  // `started` the endpoint clock's time as it starts (its context's now()).
  attempt_timer(const endpoint_runtime& rt, const handler_slot* slot, const envelope& msg,
                int attempt, time_point started) noexcept
    : rt_(&rt), started_(started) {
    auto* all = rt.status().instruments.get();
    if (!all || !slot)
      return;
    const auto& handlers = rt.definition().handlers;
    auto index = static_cast<std::size_t>(slot - handlers.data());
    if (index >= handlers.size())
      return;
    instruments_ = &all->handler(index);
    if (attempt == 1 && msg.delivery_count == 0 && msg.sent_at != time_point{})
      instruments_->send_to_start.observe(started - msg.sent_at);
  }

  // The attempt ended: `ok` if the handler returned without a failure.
  void finish(bool ok) noexcept {
    if (!instruments_)
      return;
    (ok ? instruments_->handled : instruments_->failed)
      .observe(rt_->now() - started_);
  }

private:
  const endpoint_runtime* rt_;
  time_point started_;
  handler_instruments* instruments_ = nullptr;
};

} // namespace bus::detail::metrics
