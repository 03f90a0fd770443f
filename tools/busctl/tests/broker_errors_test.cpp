// busctl's exit codes and error messages, which scripts rely on: an unknown
// id, bad usage, a broker that is not there, a refused login (without the
// password anywhere in the output) and a queue that does not exist.
#include <catch2/catch.hpp>

#include "busctl_runner.hpp"
#include "support/closed_port.hpp"

using namespace bus::ctl::test;
using bus::test::closed_port;
using bus::test::unique_name;

namespace {

// The test broker's URL with another password.
std::string url_with_password(const std::string& password) {
  auto url = broker_url();
  auto at = url.find('@');
  auto colon = url.find(':', std::string("amqp://").size());
  REQUIRE(at != std::string::npos);
  REQUIRE(colon < at);
  return url.substr(0, colon + 1) + password + url.substr(at);
}

} // namespace

TEST_CASE("busctl exits 1 for a message id that is not on the queue, and names it") {
  auto broker = bus::test::connect_transport();
  auto endpoint = unique_name("billing");
  REQUIRE(broker->declare_queue(endpoint + "_error"));
  REQUIRE(broker->send(endpoint + "_error", failed_copy("known", "t", "e", endpoint)));

  auto show = run_busctl({"show", endpoint, "no-such-id", "--url", broker_url()});
  CHECK(show.code == 1);
  CHECK_THAT(show.err, Catch::Contains("no message 'no-such-id' on '" + endpoint + "_error'"));
  CHECK(show.out.empty());

  auto replay = run_busctl({"replay", endpoint, "no-such-id", "--url", broker_url(), "--json"});
  CHECK(replay.code == 1);
  CHECK(replay.json()["unknown_ids"] == nlohmann::json({"no-such-id"}));
  CHECK(replay.json()["replayed"].empty());

  // A known and an unknown id: the known one is replayed, the exit code still says 1.
  REQUIRE(broker->declare_queue(endpoint));
  auto mixed = run_busctl({"replay", endpoint, "known", "missing", "--url", broker_url()});
  CHECK(mixed.code == 1);
  CHECK_THAT(mixed.out, Catch::Contains("replayed known to '" + endpoint + "'"));
  CHECK_THAT(mixed.err, Catch::Contains("no message 'missing'"));

  auto empty = run_busctl({"replay", endpoint, "--all", "--url", broker_url()});
  CHECK(empty.code == 1);
}

TEST_CASE("busctl exits 2 for bad usage and missing settings, before connecting") {
  auto no_selection = run_busctl({"replay", "billing"});
  CHECK(no_selection.code == 2);
  CHECK_THAT(no_selection.err, Catch::Contains("replay needs a selection"));

  auto unknown = run_busctl({"frobnicate", "billing", "--json"});
  CHECK(unknown.code == 2);
  CHECK(unknown.json()["error"]["exit_code"] == 2);

  auto no_broker = run_busctl({"list", "billing"});
  CHECK(no_broker.code == 2);
  CHECK_THAT(no_broker.err, Catch::Contains("BUS_RABBITMQ_URL"));

  auto bad_url = run_busctl({"list", "billing", "--url", "amqp://ops:Hidden-Pw-1@host:99999/"});
  CHECK(bad_url.code == 2);
  CHECK_THAT(bad_url.err + bad_url.out, !Catch::Contains("Hidden-Pw-1"));

  auto help = run_busctl({"--help"});
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("busctl replay ENDPOINT SELECTION"));
}

TEST_CASE("busctl exits 3 with a clear message when nothing listens on the broker's port") {
  auto url = "amqp://guest:guest@127.0.0.1:" + std::to_string(closed_port()) + "/";
  auto r = run_busctl({"list", "billing", "--url", url});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("cannot connect"));
  CHECK_THAT(r.err, Catch::Contains("is the broker running"));

  auto json = run_busctl({"groups", "billing", "--json"}, url);
  CHECK(json.code == 3);
  CHECK(json.json()["error"]["exit_code"] == 3);
}

TEST_CASE("busctl exits 3 for a wrong password and shows it nowhere, however it was given") {
  const std::string password = "Wr0ng-Secret-9431";
  auto url = url_with_password(password);

  auto by_option = run_busctl({"list", "billing", "--url", url});
  CHECK(by_option.code == 3);
  CHECK_THAT(by_option.err, Catch::Contains("login refused for user 'guest'"));
  CHECK_THAT(by_option.out + by_option.err, !Catch::Contains(password));

  auto by_env = run_busctl({"purge", "billing", "--all", "--json"}, url);
  CHECK(by_env.code == 3);
  CHECK_THAT(by_env.out + by_env.err, !Catch::Contains(password));
  CHECK(by_env.json()["error"]["exit_code"] == 3);

  char name[] = "/tmp/busctl-url-XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, url.data(), url.size()) == static_cast<ssize_t>(url.size()));
  ::close(fd);
  auto by_file = run_busctl({"show", "billing", "x", "--url-file", name});
  ::unlink(name);
  CHECK(by_file.code == 3);
  CHECK_THAT(by_file.out + by_file.err, !Catch::Contains(password));
}

TEST_CASE("busctl exits 4 when the queue does not exist, and says which") {
  auto endpoint = unique_name("never-declared");
  auto r = run_busctl({"list", endpoint, "--url", broker_url()});
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("no queue '" + endpoint + "_error'"));
  auto replay = run_busctl({"replay", endpoint, "--all", "--url", broker_url(), "--json"});
  CHECK(replay.code == 4);
  CHECK(replay.json()["error"]["exit_code"] == 4);
}
