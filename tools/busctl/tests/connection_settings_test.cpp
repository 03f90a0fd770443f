#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "connection_settings.hpp"

using namespace bus::ctl;

namespace {

command_line list_with(std::optional<std::string> url, std::optional<std::string> file) {
  command_line cl;
  cl.command = command_kind::list;
  cl.endpoint = "billing";
  cl.queue = "billing_error";
  cl.url = std::move(url);
  cl.url_file = std::move(file);
  return cl;
}

} // namespace

TEST_CASE("the URL given with --url is used before the environment variable") {
  auto s = resolve_settings(list_with("amqp://ops:pw@mq.example:5673/orders", {}),
                            "amqp://other@elsewhere/");
  REQUIRE(s);
  CHECK(s->host == "mq.example");
  CHECK(s->port == 5673);
  CHECK(s->vhost == "orders");
  CHECK(s->user == "ops");
  CHECK(s->connection_name == "busctl");
}

TEST_CASE("BUS_RABBITMQ_URL is used when no option names the broker") {
  auto s = resolve_settings(list_with({}, {}), "amqp://ops:pw@from-env:5672/%2F");
  REQUIRE(s);
  CHECK(s->host == "from-env");
  CHECK(s->vhost == "/");
}

TEST_CASE("a file given with --url-file is read from its first line that is not a comment") {
  char name[] = "/tmp/busctl-url-XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::string path = name;
  {
    std::ofstream f(path);
    f << "# the operators' broker\n\namqp://ops:pw@from-file:5999/ops\n";
  }
  auto s = resolve_settings(list_with({}, path), "amqp://ignored@x/");
  std::remove(path.c_str());
  REQUIRE(s);
  CHECK(s->host == "from-file");
  CHECK(s->port == 5999);
}

TEST_CASE("without any broker setting the error says how to give one") {
  auto s = resolve_settings(list_with({}, {}), nullptr);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(s.error().message, Catch::Contains("BUS_RABBITMQ_URL"));
  CHECK_THAT(s.error().message, Catch::Contains("--url"));
  CHECK_FALSE(resolve_settings(list_with({}, {}), ""));
}

TEST_CASE("a bad URL is refused without showing its password") {
  auto from_option = resolve_settings(list_with("amqp://ops:Sup3rSecret@host:notaport/", {}), nullptr);
  REQUIRE_FALSE(from_option);
  CHECK_THAT(from_option.error().message, Catch::StartsWith("--url: "));
  CHECK_THAT(from_option.error().message, !Catch::Contains("Sup3rSecret"));

  auto from_env = resolve_settings(list_with({}, {}), "amqp://ops:Sup3rSecret@host/?nonsense=1");
  REQUIRE_FALSE(from_env);
  CHECK_THAT(from_env.error().message, Catch::StartsWith("BUS_RABBITMQ_URL: "));
  CHECK_THAT(from_env.error().message, !Catch::Contains("Sup3rSecret"));
}

TEST_CASE("a settings file that cannot be read is named") {
  auto s = resolve_settings(list_with({}, "/nonexistent/busctl.url"), nullptr);
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("/nonexistent/busctl.url"));
}
