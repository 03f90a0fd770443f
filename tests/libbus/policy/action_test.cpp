#include "bus/policy/action.hpp"

#include <catch2/catch.hpp>

#include <sstream>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("each action has the name its logger uses and a line for people") {
  struct row {
    bus::action a;
    const char* name;
    const char* text;
  };
  const std::vector<row> table = {
      {bus::immediate_retry{200ms}, "immediate_retry", "immediate retry after 00:00:00.200"},
      {bus::delayed_retry{5min}, "delayed_retry", "delayed retry after 00:05:00"},
      {bus::move_to_error{"retries exhausted", ""}, "move_to_error",
       "move to the error queue: retries exhausted"},
      {bus::move_to_error{"unrecoverable", "audit_errors"}, "move_to_error",
       "move to error queue 'audit_errors': unrecoverable"},
      {bus::discard{"duplicate"}, "discard", "discard: duplicate"},
  };
  for (const auto& r : table) {
    CHECK(bus::name(r.a) == r.name);
    CHECK(bus::describe(r.a) == r.text);
    std::ostringstream streamed;
    streamed << r.a;
    CHECK(streamed.str() == r.text);
  }
}

TEST_CASE("actions are equal when their kind and every field are") {
  CHECK(bus::action{bus::immediate_retry{1s}} == bus::action{bus::immediate_retry{1000ms}});
  CHECK(bus::action{bus::immediate_retry{1s}} != bus::action{bus::delayed_retry{1s}});
  CHECK(bus::action{bus::move_to_error{"a", ""}} != bus::action{bus::move_to_error{"a", "q"}});
  CHECK(bus::action{bus::discard{"a"}} != bus::action{bus::discard{"b"}});
}
