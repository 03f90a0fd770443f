#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "leader_move.hpp"

TEST_CASE("the leader move names the queue and vhost as Erlang binaries, quotes escaped") {
  auto e = bus::ctl::move_leader_expression("v\"h", "q\\\"x");
  CHECK_THAT(e, Catch::Contains(R"(rabbit_misc:r(<<"v\"h">>, queue, <<"q\\\"x">>))"));
  CHECK_THAT(e, Catch::Contains("ra:transfer_leadership"));
  CHECK_THAT(e, Catch::Contains("ra:ping")); // only members that answer are asked
}

TEST_CASE("a rabbitmqctl that cannot run is an error that names it") {
  auto moved = bus::ctl::move_leader("/nonexistent/rabbitmqctl", "/", "q");
  REQUIRE_FALSE(moved);
  CHECK(moved.error().code == bus::errc::transport_failure);
  CHECK_THAT(moved.error().message, Catch::Contains("cannot run '/nonexistent/rabbitmqctl'"));
}

namespace {

// A stand-in for rabbitmqctl that prints `output` whatever it is asked: what
// the move's expression prints on a cluster (tests/transports/rabbitmq/
// leader_move_test.cpp runs the real one).
class fake_rabbitmqctl {
public:
  explicit fake_rabbitmqctl(const std::string& output) {
    char name[] = "/tmp/busctl-fake-rabbitmqctl-XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    path_ = name;
    std::string script = "#!/bin/sh\ncat <<'END'\n" + output + "\nEND\n";
    REQUIRE(::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size()));
    ::close(fd);
    REQUIRE(::chmod(name, 0700) == 0);
  }
  ~fake_rabbitmqctl() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

} // namespace

TEST_CASE("a move is reported with the member that leads after it") {
  fake_rabbitmqctl ctl("moved a@host b@host\nok");
  auto moved = bus::ctl::move_leader(ctl.path(), "/", "q");
  REQUIRE(moved);
  CHECK(moved->from == "a@host");
  CHECK(moved->to == "b@host");
}

TEST_CASE("a leadership that stayed is an error naming its leader and Ra's answers") {
  fake_rabbitmqctl ctl("not_moved a@host [{'b@host',ok}]\nok");
  auto moved = bus::ctl::move_leader(ctl.path(), "/", "q");
  REQUIRE_FALSE(moved);
  CHECK(moved.error().code == bus::errc::transport_failure);
  CHECK_THAT(moved.error().message,
             Catch::StartsWith("the leadership of 'q' stayed on a@host: no other member took it "
                               "(Ra answered [{'b@host',ok}])"));
}

TEST_CASE("a queue whose other members do not answer is not moved, and says which did not") {
  fake_rabbitmqctl ctl("no_answering_member a@host [{'b@host',timeout}]\nok");
  auto moved = bus::ctl::move_leader(ctl.path(), "/", "q");
  REQUIRE_FALSE(moved);
  CHECK_THAT(moved.error().message,
             Catch::Contains("is led by a@host and none of its other members answers a ping")
                 && Catch::Contains("[{'b@host',timeout}]"));
}
