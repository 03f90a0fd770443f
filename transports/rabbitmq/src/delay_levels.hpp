// The binary delay levels that hold delayed messages on the broker (the
// NServiceBus scheme, docs/rabbitmq.md): names, TTLs, binding keys and the
// routing key of a delayed message. Pure: no broker, no clock.
//
// Level k is a topic exchange and a quorum queue of the same name whose
// messages expire after 2^k units and are dead-lettered to level k-1
// (level 0 to the delivery exchange). A delayed message is published to the
// top level with the routing key "<bit N-1>.<bit N-2>...<bit 0>.<queue>":
// each level reads its own bit; 1 parks the message in its queue for 2^k
// units, 0 passes it on at once. All messages of one level queue share one
// TTL, so FIFO order equals expiry order and nothing blocks at the head.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace bus::detail {

class delay_levels {
public:
  delay_levels(unsigned levels, std::chrono::milliseconds unit);

  [[nodiscard]] unsigned count() const noexcept { return levels_; }
  [[nodiscard]] std::chrono::milliseconds unit() const noexcept { return unit_; }

  // (2^count - 1) units: the longest delay the levels can hold.
  [[nodiscard]] std::chrono::milliseconds max_delay() const noexcept;

  // The delay in whole units, rounded up: a message may come up to one unit
  // late, never early. A negative delay is 0.
  [[nodiscard]] std::uint64_t units(std::chrono::milliseconds delay) const noexcept;

  // "bus.delay.1000ms.28": the unit and the level count are in every name,
  // so processes configured differently never share (and break) a level.
  [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }
  // The exchange and the queue of level k: "<prefix>.level.07".
  [[nodiscard]] std::string level_name(unsigned k) const;
  // Where level 0 dead-letters to; every destination queue binds here.
  [[nodiscard]] std::string delivery_exchange() const { return prefix_ + ".delivery"; }
  // Where a delayed message is published: the top level.
  [[nodiscard]] std::string entry_exchange() const { return level_name(levels_ - 1); }
  // Where level k's queue dead-letters to: level k-1, or the delivery exchange.
  [[nodiscard]] std::string next_exchange(unsigned k) const;

  [[nodiscard]] std::int64_t level_ttl_ms(unsigned k) const noexcept;

  // The binding of level k that matches bit k = `bit`: "*.*.1.#" has
  // (count - 1 - k) leading words for the higher bits.
  [[nodiscard]] std::string bit_binding(unsigned k, bool bit) const;

  // How `queue` binds to the delivery exchange: exactly `count` "*" words,
  // then its name, so a suffix can never match another queue.
  [[nodiscard]] std::string destination_binding(const std::string& queue) const;

  // The routing key of a message held `units` units for `queue`.
  // Precondition: units <= 2^count - 1.
  [[nodiscard]] std::string routing_key(std::uint64_t units, const std::string& queue) const;

private:
  unsigned levels_;
  std::chrono::milliseconds unit_;
  std::string prefix_;
};

} // namespace bus::detail
