#include <catch2/catch.hpp>

#include "bus/headers.hpp"

using bus::headers;

TEST_CASE("setting a header twice keeps one entry with the last value") {
  headers h;
  h.set("tenant", "acme");
  h.set("tenant", "globex");
  CHECK(h.size() == 1);
  CHECK(h.find("tenant") == std::optional<std::string_view>("globex"));
}

TEST_CASE("headers keep their insertion order") {
  headers h{{"b", "2"}, {"a", "1"}, {"c", "3"}};
  std::vector<std::string> names;
  for (const auto& [name, value] : h)
    names.push_back(name);
  CHECK(names == std::vector<std::string>{"b", "a", "c"});
}

TEST_CASE("a missing header is not found and erasing it reports so") {
  headers h{{"a", "1"}};
  CHECK_FALSE(h.find("b").has_value());
  CHECK_FALSE(h.erase("b"));
  CHECK(h.erase("a"));
  CHECK(h.empty());
}

TEST_CASE("erasing by prefix removes exactly the headers that start with it") {
  headers h{{"bus-fault-message", "x"}, {"bus-message-id", "1"}, {"bus-fault-at", "t"},
            {"tenant", "acme"}};
  CHECK(h.erase_prefix("bus-fault-") == 2);
  CHECK(h == headers{{"bus-message-id", "1"}, {"tenant", "acme"}});
}
