#include <catch2/catch.hpp>

#include "leader_move.hpp"

TEST_CASE("the leader move names the queue and vhost as Erlang binaries, quotes escaped") {
  auto e = bus::ctl::move_leader_expression("v\"h", "q\\\"x");
  CHECK_THAT(e, Catch::Contains(R"(rabbit_misc:r(<<"v\"h">>, queue, <<"q\\\"x">>))"));
  CHECK_THAT(e, Catch::Contains("ra:transfer_leadership"));
}

TEST_CASE("a rabbitmqctl that cannot run is an error that names it") {
  auto moved = bus::ctl::move_leader("/nonexistent/rabbitmqctl", "/", "q");
  REQUIRE_FALSE(moved);
  CHECK(moved.error().code == bus::errc::transport_failure);
  CHECK_THAT(moved.error().message, Catch::Contains("cannot run '/nonexistent/rabbitmqctl'"));
}
