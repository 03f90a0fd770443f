// RabbitMQ settings from a URL, the environment or a file: what each part
// of the URL sets, what is refused, and that no password leaks.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "bus/rabbitmq_settings.hpp"
#include "support/scratch_directory.hpp"
#include "topology.hpp" // dead_letter_queue

using namespace std::chrono_literals;

namespace {

bus::rabbitmq_settings parsed(const std::string& url) {
  auto s = bus::parse_rabbitmq_url(url);
  INFO(url);
  if (!s)
    FAIL(s.error().message);
  return *s;
}

std::string refusal(const std::string& url) {
  auto s = bus::parse_rabbitmq_url(url);
  INFO(url);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == bus::errc::invalid_configuration);
  return s.error().message;
}

} // namespace

TEST_CASE("a full URL sets the host, port, credentials and vhost", "[rabbitmq][settings]") {
  auto s = parsed("amqp://billing:s3cret@mq.example.com:5673/orders");
  CHECK(s.host == "mq.example.com");
  CHECK(s.port == 5673);
  CHECK(s.user == "billing");
  CHECK(s.password == "s3cret");
  CHECK(s.vhost == "orders");
  CHECK_FALSE(s.tls);
}

TEST_CASE("what a URL leaves out keeps RabbitMQ's defaults", "[rabbitmq][settings]") {
  auto s = parsed("amqp://mq");
  CHECK(s.host == "mq");
  CHECK(s.port == 5672);
  CHECK(s.user == "guest");
  CHECK(s.password == "guest");
  CHECK(s.vhost == "/");
  CHECK(s.queue_type == bus::rabbitmq_queue_type::classic);
  CHECK(parsed("amqp://").host == "localhost");
  CHECK(parsed("amqp://mq/").vhost == "/");
}

TEST_CASE("user, password and vhost are percent-decoded, so vhost / is %2F",
          "[rabbitmq][settings]") {
  auto s = parsed("amqp://us%40er:p%3Ass%2Fw%25rd@mq/%2F");
  CHECK(s.user == "us@er");
  CHECK(s.password == "p:ss/w%rd");
  CHECK(s.vhost == "/");
  CHECK(parsed("amqp://mq/team%2Fa").vhost == "team/a");
}

TEST_CASE("amqps switches TLS on with peer verification and port 5671", "[rabbitmq][settings]") {
  auto s = parsed("amqps://mq?cacertfile=/etc/ca.pem&certfile=/c.pem&keyfile=/k.pem");
  CHECK(s.tls);
  CHECK(s.port == 5671);
  CHECK(s.verify_peer);
  CHECK(s.verify_hostname);
  CHECK(s.ca_cert_file == "/etc/ca.pem");
  CHECK(s.client_cert_file == "/c.pem");
  CHECK(s.client_key_file == "/k.pem");
  auto unverified = parsed("amqps://mq?verify=verify_none");
  CHECK_FALSE(unverified.verify_peer);
  CHECK_FALSE(unverified.verify_hostname);
  CHECK(unverified.describe().find("NOT verified") != std::string::npos);
}

TEST_CASE("query parameters set timeouts, the queue type and the delay levels",
          "[rabbitmq][settings]") {
  auto s = parsed("amqp://mq?heartbeat=30&connection_timeout=1500&operation_timeout=2500"
                  "&queue_type=classic&delay_unit=100&delay_levels=8&connection_name=billing%20api"
                  "&reconnect_delay_min=100&reconnect_delay_max=900");
  CHECK(s.heartbeat == 30s);
  CHECK(s.connect_timeout == 1500ms);
  CHECK(s.operation_timeout == 2500ms);
  CHECK(s.queue_type == bus::rabbitmq_queue_type::classic);
  CHECK(s.delay_unit == 100ms);
  CHECK(s.delay_levels == 8);
  CHECK(s.connection_name == "billing api");
  CHECK(s.reconnect_delay_min == 100ms);
  CHECK(s.reconnect_delay_max == 900ms);
  CHECK(parsed("amqp://mq").confirm_stall_timeout == 0ms); // a quarter of operation_timeout
  CHECK(parsed("amqp://mq?confirm_stall_timeout=4000").confirm_stall_timeout == 4000ms);
  CHECK_THAT(refusal("amqp://mq?operation_timeout=2000&confirm_stall_timeout=2000"),
             Catch::Contains("confirm_stall_timeout must be 0"));
  CHECK(parsed("amqp://[::1]:5680/").host == "::1");
  CHECK(parsed("amqp://[::1]:5680/").port == 5680);
}

TEST_CASE("a malformed URL is refused with a message that names the mistake",
          "[rabbitmq][settings]") {
  CHECK_THAT(refusal("http://mq"), Catch::Contains("amqp:// or amqps://"));
  CHECK_THAT(refusal("amqp://mq:notaport"), Catch::Contains("port 'notaport'"));
  CHECK_THAT(refusal("amqp://mq:70000"), Catch::Contains("port"));
  CHECK_THAT(refusal("amqp://mq?hearbeat=5"), Catch::Contains("unknown parameter 'hearbeat'"));
  CHECK_THAT(refusal("amqp://mq?queue_type=stream"), Catch::Contains("quorum nor classic"));
  CHECK_THAT(refusal("amqp://mq?heartbeat=soon"), Catch::Contains("seconds"));
  CHECK_THAT(refusal("amqp://mq/a/b"), Catch::Contains("%2F"));
  CHECK_THAT(refusal("amqp://mq/%zz"), Catch::Contains("%-escape"));
  CHECK_THAT(refusal("amqp://mq?cacertfile=/ca.pem"), Catch::Contains("not amqps"));
  CHECK_THAT(refusal("amqps://mq?certfile=/c.pem"), Catch::Contains("both certfile and keyfile"));
}

TEST_CASE("settings refuse delay levels the broker could not hold", "[rabbitmq][settings]") {
  CHECK_THAT(refusal("amqp://mq?delay_levels=0"), Catch::Contains("between 1 and 40"));
  CHECK_THAT(refusal("amqp://mq?delay_unit=0"), Catch::Contains("delay_unit"));
  // 2^28 s exceeds the largest TTL RabbitMQ takes; 28 levels of 1 s do not.
  CHECK_THAT(refusal("amqp://mq?delay_levels=29"), Catch::Contains("largest message TTL"));
  CHECK(parsed("amqp://mq?delay_levels=28").delay_levels == 28);
}

TEST_CASE("every mistake of a settings value is reported at once", "[rabbitmq][settings]") {
  bus::rabbitmq_settings s;
  s.host = "";
  s.operation_timeout = 0ms;
  s.reconnect_delay_max = 1ms;
  auto valid = s.validate();
  REQUIRE_FALSE(valid);
  CHECK_THAT(valid.error().message, Catch::Contains("host is empty"));
  CHECK_THAT(valid.error().message, Catch::Contains("operation_timeout"));
  CHECK_THAT(valid.error().message, Catch::Contains("reconnect_delay_min <= reconnect_delay_max"));
}

TEST_CASE("the password appears in no description and no error", "[rabbitmq][settings]") {
  auto s = parsed("amqp://billing:hunter2@mq:5672/orders");
  CHECK(s.describe() == "amqp://billing@mq:5672/orders");
  CHECK(parsed("amqp://mq").describe() == "amqp://guest@mq:5672/%2F");
  auto message = refusal("amqp://billing:hunter2@mq:bad/orders");
  CHECK_THAT(message, !Catch::Contains("hunter2"));
  CHECK_THAT(message, Catch::Contains("billing:***@mq"));
  CHECK(bus::redact_url("amqp://u:p@ss@h/v") == "amqp://u:***@h/v");
  CHECK(bus::redact_url("amqp://u@h/v") == "amqp://u@h/v");
  CHECK(bus::redact_url("not a url") == "not a url");
}

TEST_CASE("settings come from an environment variable", "[rabbitmq][settings]") {
  ::setenv("BUS_TEST_RABBITMQ_URL", "amqp://env-user:pw@env-host:5999/env", 1);
  auto s = bus::rabbitmq_settings_from_env("BUS_TEST_RABBITMQ_URL");
  REQUIRE(s);
  CHECK(s->host == "env-host");
  CHECK(s->port == 5999);
  CHECK(s->user == "env-user");
  ::setenv("BUS_TEST_RABBITMQ_URL", "amqp://env-user:pw@env-host:x/", 1);
  auto bad = bus::rabbitmq_settings_from_env("BUS_TEST_RABBITMQ_URL");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("BUS_TEST_RABBITMQ_URL: "));
  CHECK_THAT(bad.error().message, !Catch::Contains(":pw@"));
  ::unsetenv("BUS_TEST_RABBITMQ_URL");
  auto missing = bus::rabbitmq_settings_from_env("BUS_TEST_RABBITMQ_URL");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("BUS_TEST_RABBITMQ_URL is not set"));
}

TEST_CASE("settings come from the first URL line of a file", "[rabbitmq][settings]") {
  char name[] = "/tmp/bus-rabbitmq-settings-XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::string path = name;
  {
    std::ofstream out(path);
    out << "# the billing broker\n\n  amqps://file-user:pw@file-host/?cacertfile=/ca.pem  \n";
  }
  auto s = bus::rabbitmq_settings_from_file(path);
  REQUIRE(s);
  CHECK(s->host == "file-host");
  CHECK(s->tls);
  CHECK(s->ca_cert_file == "/ca.pem");
  {
    std::ofstream out(path);
    out << "# nothing here\n";
  }
  auto empty = bus::rabbitmq_settings_from_file(path);
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("holds no URL"));
  std::remove(path.c_str());
  auto missing = bus::rabbitmq_settings_from_file(path);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("cannot read"));
}

TEST_CASE("a URL lists a cluster's nodes: the first is host:port, the others fail over",
          "[rabbitmq][settings][cluster]") {
  auto s = parsed("amqp://u:p@h1:5673,h2,[::1]:5680/orders?heartbeat=3");
  CHECK(s.host == "h1");
  CHECK(s.port == 5673);
  REQUIRE(s.failover_nodes.size() == 2);
  CHECK(s.failover_nodes[0].host == "h2");
  CHECK(s.failover_nodes[0].port == 5672); // the scheme's default, not h1's port
  CHECK(s.failover_nodes[1].host == "::1");
  CHECK(s.failover_nodes[1].port == 5680);
  CHECK(s.vhost == "orders");
  CHECK(s.heartbeat == 3s);
  auto order = s.nodes();
  REQUIRE(order.size() == 3);
  CHECK(order[0].host == "h1");
  CHECK(order[2].port == 5680);
  CHECK(s.describe() == "amqp://u@h1:5673,h2:5672,[::1]:5680/orders");
  CHECK(parsed("amqps://a,b").failover_nodes.at(0).port == 5671);
  CHECK_THAT(refusal("amqp://h1,,h2"), Catch::Contains("empty host"));
  CHECK_THAT(refusal("amqp://h1,h2:0"), Catch::Contains("port '0'"));
  CHECK_THAT(refusal("amqp://u:hunter2@h1,:5672"), !Catch::Contains("hunter2"));
}

TEST_CASE("quorum queues take an explicit delivery limit and an error queue suffix",
          "[rabbitmq][settings][quorum]") {
  auto s = parsed("amqp://mq?queue_type=quorum&delivery_limit=3&error_queue_suffix=.err");
  CHECK(s.delivery_limit == 3);
  CHECK(s.error_queue_suffix == ".err");
  CHECK(parsed("amqp://mq?queue_type=quorum").delivery_limit == 20);
  CHECK_THAT(refusal("amqp://mq?queue_type=quorum&delivery_limit=0"),
             Catch::Contains("delivery_limit must be at least 1"));
  CHECK_THAT(refusal("amqp://mq?delivery_limit=many"), Catch::Contains("whole number"));
}

TEST_CASE("a quorum queue dead-letters to the error queue the bus names for its endpoint",
          "[rabbitmq][settings][quorum]") {
  bus::rabbitmq_settings s;
  bus::queue_options named;
  named.dead_letter_queue = "billing_failures";
  // What the bus declares with: its endpoint's error queue, whatever its name.
  CHECK(bus::detail::dead_letter_queue("billing", named, s) == "billing_failures");
  CHECK(bus::detail::dead_letter_queue("billing_skipped", named, s) == "billing_failures");
  CHECK(bus::detail::dead_letter_queue("billing_failures", named, s) == "billing_failures");
}

TEST_CASE("a queue declared without an error queue dead-letters by the suffixes of the settings",
          "[rabbitmq][settings][quorum]") {
  bus::rabbitmq_settings s;
  bus::queue_options none;
  CHECK(bus::detail::dead_letter_queue("billing", none, s) == "billing_error");
  CHECK(bus::detail::dead_letter_queue("billing_skipped", none, s) == "billing_error");
  CHECK(bus::detail::dead_letter_queue("billing_error", none, s) == "billing_error");
  s.error_queue_suffix = ".errors";
  CHECK(bus::detail::dead_letter_queue("billing", none, s) == "billing.errors");
  CHECK(bus::detail::dead_letter_queue("billing_skipped", none, s) == "billing.errors");
}

TEST_CASE("a management URL switches the delay-level watch on, and it carries no user and must be "
          "http or https",
          "[rabbitmq][settings][stranded]") {
  auto s = parsed("amqp://u:p@mq/?management_url=http://mq:15672&level_watch_interval=500"
                  "&stranded_margin=2000");
  CHECK(s.management_url == "http://mq:15672");
  CHECK(s.level_watch_interval == std::chrono::milliseconds(500));
  CHECK(s.stranded_margin == std::chrono::milliseconds(2000));
  auto plain = parsed("amqp://mq");
  CHECK(plain.management_url.empty());
  CHECK(plain.level_watch_interval == std::chrono::seconds(15));
  CHECK(plain.stranded_margin == std::chrono::seconds(30));
  CHECK_THAT(refusal("amqp://mq?management_url=ftp://mq:15672"),
             Catch::Contains("not an http:// or https:// URL"));
  CHECK_THAT(refusal("amqp://u:p@mq?management_url=http://u:secret@mq:15672"),
             Catch::Contains("must not carry a user"));
  CHECK_THAT(refusal("amqp://mq?management_url=http://mq&level_watch_interval=0"),
             Catch::Contains("level_watch_interval must be positive"));
}

TEST_CASE("a value of a shell's KEY=VALUE file is read as the shell reads it, quotes removed",
          "[rabbitmq][settings][env_file]") {
  bus::test::scratch_directory dir;
  auto path = dir.file("broker.env");
  {
    std::ofstream out(path);
    // As scripts/rabbitmq-test-broker.sh writes them: a plain word as it
    // is, anything else single-quoted with '\'' for a quote.
    out << "# the test broker\n"
        << "BUS_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5672/\n"
        << "BUS_RABBITMQ_QUORUM_URL='amqp://guest:guest@127.0.0.1:5672/?queue_type=quorum&delivery_limit=3'\n"
        << "BUS_RABBITMQ_CTL='/tmp/a dir/ctl'\n"
        << "BUS_RABBITMQ_NOTE='it'\\''s here'\n"
        << "export BUS_RABBITMQ_DOUBLE=\"say \\\"hi\\\"\"\n"
        << "BUS_RABBITMQ_OPEN='never closed\n";
  }
  CHECK(bus::env_file_value(path, "BUS_RABBITMQ_URL").value()
        == "amqp://guest:guest@127.0.0.1:5672/");
  CHECK(bus::env_file_value(path, "BUS_RABBITMQ_QUORUM_URL").value()
        == "amqp://guest:guest@127.0.0.1:5672/?queue_type=quorum&delivery_limit=3");
  CHECK(bus::env_file_value(path, "BUS_RABBITMQ_CTL").value() == "/tmp/a dir/ctl");
  CHECK(bus::env_file_value(path, "BUS_RABBITMQ_NOTE").value() == "it's here");
  CHECK(bus::env_file_value(path, "BUS_RABBITMQ_DOUBLE").value() == "say \"hi\"");
  // A URL read from it parses: no quote is left in it.
  CHECK(bus::parse_rabbitmq_url(bus::env_file_value(path, "BUS_RABBITMQ_QUORUM_URL").value()));

  auto open = bus::env_file_value(path, "BUS_RABBITMQ_OPEN");
  REQUIRE_FALSE(open);
  CHECK_THAT(open.error().message, Catch::Contains("never closed"));
  auto missing = bus::env_file_value(path, "BUS_RABBITMQ");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("sets no BUS_RABBITMQ"));
  CHECK_FALSE(bus::env_file_value(dir.file("none.env"), "BUS_RABBITMQ_URL"));
}
