// The arithmetic of the binary delay levels: which levels a delay passes,
// how long each holds, and how destinations bind.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "delay_levels.hpp"

using namespace std::chrono_literals;
using bus::detail::delay_levels;

TEST_CASE("a delay is held in whole units, rounded up so it is never early", "[rabbitmq][delay]") {
  delay_levels levels(8, 100ms);
  CHECK(levels.units(0ms) == 0);
  CHECK(levels.units(-5ms) == 0);
  CHECK(levels.units(1ms) == 1);
  CHECK(levels.units(100ms) == 1);
  CHECK(levels.units(101ms) == 2);
  CHECK(levels.units(2500ms) == 25);
  CHECK(levels.max_delay() == 25500ms); // (2^8 - 1) * 100 ms
  CHECK(delay_levels(28, 1000ms).max_delay() == std::chrono::milliseconds(268435455000));
}

TEST_CASE("the routing key spells the delay in binary, highest level first, then the queue",
          "[rabbitmq][delay]") {
  delay_levels levels(8, 1000ms);
  CHECK(levels.routing_key(3, "billing") == "0.0.0.0.0.0.1.1.billing");
  CHECK(levels.routing_key(0, "billing") == "0.0.0.0.0.0.0.0.billing");
  CHECK(levels.routing_key(255, "a.b") == "1.1.1.1.1.1.1.1.a.b");
  CHECK(levels.routing_key(128, "q") == "1.0.0.0.0.0.0.0.q");
}

TEST_CASE("level k holds 2^k units and passes on to level k-1, level 0 to delivery",
          "[rabbitmq][delay]") {
  delay_levels levels(8, 100ms);
  CHECK(levels.level_ttl_ms(0) == 100);
  CHECK(levels.level_ttl_ms(7) == 12800);
  CHECK(levels.prefix() == "bus.delay.100ms.8");
  CHECK(levels.level_name(3) == "bus.delay.100ms.8.level.03");
  CHECK(levels.entry_exchange() == "bus.delay.100ms.8.level.07");
  CHECK(levels.next_exchange(3) == "bus.delay.100ms.8.level.02");
  CHECK(levels.next_exchange(0) == "bus.delay.100ms.8.delivery");
}

TEST_CASE("each level binds on its own bit, and a destination on exactly N words before its name",
          "[rabbitmq][delay]") {
  delay_levels levels(4, 1000ms);
  CHECK(levels.bit_binding(3, true) == "1.#");
  CHECK(levels.bit_binding(3, false) == "0.#");
  CHECK(levels.bit_binding(1, true) == "*.*.1.#");
  CHECK(levels.bit_binding(0, false) == "*.*.*.0.#");
  CHECK(levels.destination_binding("billing") == "*.*.*.*.billing");
}

// A topic-exchange word match, enough to walk a key through the levels.
namespace {

bool topic_matches(const std::string& pattern, const std::string& key) {
  auto split = [](const std::string& s) {
    std::vector<std::string> words;
    std::size_t start = 0;
    for (;;) {
      auto dot = s.find('.', start);
      words.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos)
        return words;
      start = dot + 1;
    }
  };
  auto p = split(pattern), k = split(key);
  std::function<bool(std::size_t, std::size_t)> match = [&](std::size_t i, std::size_t j) {
    if (i == p.size())
      return j == k.size();
    if (p[i] == "#")
      return match(i + 1, j) || (j < k.size() && match(i, j + 1));
    if (j == k.size())
      return false;
    return (p[i] == "*" || p[i] == k[j]) && match(i + 1, j + 1);
  };
  return match(0, 0);
}

} // namespace

TEST_CASE("a message parks exactly in the levels of its set bits, and its total wait is the delay",
          "[rabbitmq][delay]") {
  delay_levels levels(6, 100ms);
  for (std::uint64_t units : {0u, 1u, 5u, 32u, 63u}) {
    auto key = levels.routing_key(units, "orders.billing");
    std::int64_t waited = 0;
    for (unsigned k = levels.count(); k-- > 0;) {
      bool park = topic_matches(levels.bit_binding(k, true), key);
      bool pass = topic_matches(levels.bit_binding(k, false), key);
      INFO("units " << units << ", level " << k);
      CHECK(park != pass); // exactly one way on at every level
      if (park)
        waited += levels.level_ttl_ms(k);
    }
    CHECK(waited == static_cast<std::int64_t>(units) * 100);
    CHECK(topic_matches(levels.destination_binding("orders.billing"), key));
    CHECK_FALSE(topic_matches(levels.destination_binding("billing"), key));
  }
}
