// Connections: clear and quick errors for what cannot work (a wrong
// password, nobody listening, a certificate from the wrong CA), TLS that
// works, and recovery from a connection the broker closed mid-run.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "broker.hpp"
#include "support/eventually.hpp"
#include "support/closed_port.hpp"
#include "support/delivery_collector.hpp"

using namespace std::chrono_literals;
using bus::test::closed_port;
using bus::test::delivery_collector;
using bus::test::eventually;
using clock_type = std::chrono::steady_clock;

namespace {

bus::envelope heartbeat_message(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "heartbeat_checked";
  env.body = bus::message_body::text("{}");
  return env;
}

struct timed_failure {
  bus::error error;
  std::chrono::milliseconds took;
};

timed_failure connect_failure(bus::rabbitmq_settings s) {
  auto start = clock_type::now();
  auto t = bus::rabbitmq_transport::connect(std::move(s));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  REQUIRE_FALSE(t);
  return {t.error(), took};
}

} // namespace

TEST_CASE(
    "a wrong password is refused at once, with an error that names the user, not the password",
    "[rabbitmq][connection]") {
  auto s = bus::test::test_settings();
  s.password = "not-the-Password-42";
  auto failed = connect_failure(s);
  CHECK(failed.took < 5s);
  CHECK(failed.error.code == bus::errc::transport_failure);
  CHECK_THAT(failed.error.message, Catch::Contains("login refused for user 'guest'"));
  CHECK_THAT(failed.error.message, Catch::Contains("ACCESS_REFUSED"));
  CHECK_THAT(failed.error.message, Catch::Contains(s.describe()));
  CHECK_THAT(failed.error.message, !Catch::Contains("not-the-Password-42"));
}

TEST_CASE("a port nobody listens on is an error within the connect timeout, not a hang",
          "[rabbitmq][connection]") {
  auto s = bus::test::test_settings();
  s.port = closed_port();
  s.connect_timeout = 2s;
  auto failed = connect_failure(s);
  CHECK(failed.took < 3s);
  CHECK(failed.error.code == bus::errc::transport_failure);
  CHECK_THAT(failed.error.message, Catch::Contains("cannot connect"));
  CHECK_THAT(failed.error.message, Catch::Contains("is the broker running and listening on port "
                                                   + std::to_string(s.port)));
  CHECK_THAT(failed.error.message, !Catch::Contains(":guest@"));
}

TEST_CASE("a vhost that does not exist is named in the error", "[rabbitmq][connection]") {
  auto s = bus::test::test_settings();
  s.vhost = "no-such-vhost";
  auto failed = connect_failure(s);
  CHECK(failed.took < 5s);
  CHECK_THAT(failed.error.message, Catch::Contains("may not use vhost 'no-such-vhost'"));
}

TEST_CASE("plain AMQP against the TLS port fails fast with a hint", "[rabbitmq][connection]") {
  auto tls = bus::parse_rabbitmq_url(bus::test::broker_env("BUS_RABBITMQ_TLS_URL"));
  REQUIRE(tls);
  auto s = bus::test::test_settings();
  s.port = tls->port;
  s.connect_timeout = 2s;
  auto failed = connect_failure(s);
  CHECK(failed.took < 3s);
  CHECK_THAT(failed.error.message, Catch::Contains("login failed"));
}

TEST_CASE("amqps carries messages over TLS, verifying the broker's certificate",
          "[rabbitmq][connection][tls]") {
  auto s = bus::test::test_settings("BUS_RABBITMQ_TLS_URL");
  REQUIRE(s.tls);
  REQUIRE(s.verify_peer);
  REQUIRE(s.verify_hostname);
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("tls");
  REQUIRE(t->declare_queue(q));
  delivery_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));
  REQUIRE(t->send(q, heartbeat_message("over-tls")));
  REQUIRE(got.wait_for(1));
  CHECK(got.items()[0].message->message_id == "over-tls");
  CHECK(t->ack(got.items()[0].tag));
}

TEST_CASE("a broker certificate that the trusted CA did not sign is refused with a clear error",
          "[rabbitmq][connection][tls]") {
  auto s = bus::test::test_settings("BUS_RABBITMQ_TLS_URL");
  s.ca_cert_file = bus::test::broker_env("BUS_RABBITMQ_WRONG_CA");
  auto failed = connect_failure(s);
  CHECK(failed.took < 5s);
  CHECK(failed.error.code == bus::errc::transport_failure);
  CHECK_THAT(failed.error.message, Catch::Contains("TLS"));
  CHECK_THAT(failed.error.message, Catch::Contains(s.ca_cert_file));
  auto missing = s;
  missing.ca_cert_file = "/nonexistent/ca.pem";
  CHECK_THAT(connect_failure(missing).error.message,
             Catch::Contains("cannot load CA certificates from '/nonexistent/ca.pem'"));
}

TEST_CASE("a connection the broker closes mid-run loses no confirmed message and comes back",
          "[rabbitmq][connection][reconnect]") {
  // Its own vhost: closing every connection there disturbs no other test.
  auto s = bus::test::test_settings("BUS_RABBITMQ_CHAOS_URL");
  s.reconnect_delay_min = 100ms;
  bus::test::log_capture log;
  s.log = log.sink();
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("chaos");
  REQUIRE(t->declare_queue(q));
  delivery_collector got;
  REQUIRE(t->consume(q, 20, got.handler()));
  // Deliveries held unsettled across the loss: their acks must not be sent
  // on the new connection, where the same broker tags name other messages.
  auto held_queue = bus::test::unique_name("chaos_held");
  REQUIRE(t->declare_queue(held_queue));
  delivery_collector held;
  REQUIRE(t->consume(held_queue, 10, held.handler()));
  for (int i = 0; i < 3; ++i)
    REQUIRE(t->send(held_queue, heartbeat_message("held-" + std::to_string(i))));
  REQUIRE(held.wait_for(3));

  // A sender keeps sending; a send that returned success was confirmed.
  std::atomic<bool> stop_sending{false};
  std::vector<std::string> confirmed;
  std::size_t refused = 0;
  std::thread sender([&] {
    for (int i = 0; !stop_sending; ++i) {
      auto id = "m-" + std::to_string(i);
      if (t->send(q, heartbeat_message(id)))
        confirmed.push_back(id);
      else
        ++refused;
    }
  });
  // An acker settles every delivery; an ack for a delivery of the lost
  // connection is refused, and that message must come again.
  std::atomic<bool> stop_acking{false};
  std::mutex refused_mutex;
  std::vector<std::string> ack_refused; // guarded by refused_mutex
  std::thread acker([&] {
    std::size_t next = 0;
    while (!stop_acking) {
      if (!got.wait_for(next + 1, 50ms))
        continue;
      auto items = got.items();
      for (; next < items.size(); ++next) {
        if (t->ack(items[next].tag))
          continue;
        std::lock_guard<std::mutex> guard(refused_mutex);
        ack_refused.push_back(items[next].message->message_id);
      }
    }
  });

  REQUIRE(got.wait_for(50, 10s));
  REQUIRE(bus::test::rabbitmqctl("close_all_connections --vhost bus-chaos 'bus transport test'")
          == 0);
  CHECK(eventually([&] { return t->reconnects() >= 2; }, 15s)); // both connections
  auto after_close = got.size();
  REQUIRE(got.wait_for(after_close + 50, 10s)); // delivering again, sending again
  stop_sending = true;
  sender.join();

  std::set<std::string> wanted(confirmed.begin(), confirmed.end());
  CHECK(eventually(
      [&] {
        std::set<std::string> seen;
        for (const auto& d : got.items())
          seen.insert(d.message->message_id);
        return std::includes(seen.begin(), seen.end(), wanted.begin(), wanted.end());
      },
      10s));
  // Every refused ack's message was delivered again.
  CHECK(eventually(
      [&] {
        std::map<std::string, int> count;
        for (const auto& d : got.items())
          ++count[d.message->message_id];
        std::lock_guard<std::mutex> guard(refused_mutex);
        return std::all_of(ack_refused.begin(), ack_refused.end(),
                           [&](const std::string& id) { return count[id] >= 2; });
      },
      10s));
  stop_acking = true;
  acker.join();

  // The held deliveries: their old tags are refused, the broker delivers
  // them again, and the new tags settle them.
  auto before = held.items();
  for (std::size_t i = 0; i < 3; ++i) {
    auto stale = t->ack(before[i].tag);
    REQUIRE_FALSE(stale);
    CHECK_THAT(stale.error().message, Catch::Contains("closed since"));
  }
  REQUIRE(held.wait_for(6));
  auto again = held.items();
  for (std::size_t i = 3; i < 6; ++i) {
    CHECK(again[i].redelivered);
    CHECK(again[i].message->message_id == before[i - 3].message->message_id);
    CHECK(t->ack(again[i].tag));
  }

  INFO(confirmed.size() << " confirmed, " << refused << " refused, " << ack_refused.size()
                        << " acks refused, " << got.size() << " deliveries");
  // The outage was short: sends waited for the new connection, none failed.
  CHECK(refused == 0);
  auto lines = log.lines();
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("CONNECTION_FORCED") != std::string::npos;
  }));
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const std::string& l) { return l.find("is back") != std::string::npos; }));
  // No channel was closed for a wrong acknowledgement.
  CHECK(std::none_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("unknown delivery tag") != std::string::npos;
  }));

  // What was acknowledged stays acknowledged: once the connections close,
  // the broker would requeue anything unsettled, and there is none.
  t.reset();
  auto checker = bus::test::connect_transport(bus::test::test_settings("BUS_RABBITMQ_CHAOS_URL"));
  CHECK(checker->message_count(held_queue).value() == 0);
}

// The I/O threads come back within a quarter of the heartbeat to keep it
// going. With a heartbeat under 4 s that quarter, in whole seconds, was 0:
// both threads of every transport polled without waiting, a core each.
TEST_CASE("an idle transport with a 2 s heartbeat waits instead of spinning",
          "[rabbitmq][connection]") {
  auto s = bus::test::test_settings();
  s.heartbeat = std::chrono::seconds(2);
  auto t = bus::test::connect_transport(s);
  auto q = bus::test::unique_name("idle_heartbeat");
  REQUIRE(t->declare_queue(q));
  delivery_collector got;
  REQUIRE(t->consume(q, 1, got.handler())); // both threads have work to wait for
  auto cpu_seconds = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
           + static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  auto before = cpu_seconds();
  std::this_thread::sleep_for(1s); // the interval measured, not a wait for work
  auto used = cpu_seconds() - before;
  CHECK(used < 0.2); // two spinning threads use up to two seconds of CPU in it
  // The heartbeats still go out: the connection is alive after 3 heartbeats.
  std::this_thread::sleep_for(6s);
  REQUIRE(t->send(q, [] {
    bus::envelope e;
    e.message_id = "after-idle";
    e.message_type = "ping";
    e.body = bus::message_body::text("{}");
    return e;
  }()));
  REQUIRE(got.wait_for(1, 5s));
  CHECK(t->reconnects() == 0);
}
