// Times one handler attempt for metrics, from the consumer: its duration
// by outcome and, for a message's first attempt on its first delivery, the
// time since its bus-sent-at. With metrics off (no instruments on the
// endpoint) it reads no clock and costs one null check.
#pragma once

#include <chrono>

#include "endpoint_runtime.hpp"
#include "instruments.hpp"

namespace bus::detail::metrics {

class attempt_timer {
public:
  // `slot` is the handler about to run, one of rt's definition's handlers.
  attempt_timer(const endpoint_runtime& rt, const handler_slot* slot, const envelope& msg,
                int attempt) noexcept {
    auto* all = rt.status().instruments.get();
    if (!all || !slot)
      return;
    const auto& handlers = rt.definition().handlers;
    auto index = static_cast<std::size_t>(slot - handlers.data());
    if (index >= handlers.size())
      return;
    instruments_ = &all->handler(index);
    if (attempt == 1 && msg.delivery_count == 0 && msg.sent_at != time_point{})
      instruments_->send_to_start.observe(rt.now() - msg.sent_at);
    started_ = std::chrono::steady_clock::now();
  }

  // The attempt ended: `ok` if the handler returned without a failure.
  void finish(bool ok) noexcept {
    if (!instruments_)
      return;
    (ok ? instruments_->handled : instruments_->failed)
      .observe(std::chrono::steady_clock::now() - started_);
  }

private:
  handler_instruments* instruments_ = nullptr;
  std::chrono::steady_clock::time_point started_{};
};

} // namespace bus::detail::metrics
